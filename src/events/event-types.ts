import { z } from 'zod';

export const eventTypes = [
  'task.started',
  'step.started',
  'text.delta',
  'tool.call',
  'tool.result',
  'step.finished',
  'task.finished',
] as const;
export type EventType = (typeof eventTypes)[number];

/** One progress event as sent on a stream (heartbeats are built separately: they have no seq). */
export const taskEventSchema = z.object({
  seq: z.number().int().min(1),
  type: z.enum(eventTypes),
  taskId: z.string(),
  parentSeq: z.number().int().min(1).optional(),
  at: z.string(),
  data: z.record(z.string(), z.unknown()),
});
export type TaskEvent = z.infer<typeof taskEventSchema>;

/** A stored event together with its wire form, serialised once for every reader. */
export interface StoredEvent {
  taskId: string;
  seq: number;
  /** Place among all events of the task's parent (the parent stream's `after` cursor). */
  parentSeq?: number;
  type: EventType;
  json: string;
}

export const TERMINAL_EVENT: EventType = 'task.finished';
