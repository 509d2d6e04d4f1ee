import { iso } from '../shapes/time.ts';
import type { EventType, StoredEvent } from './event-types.ts';

/** Scope of a parent stream: the tenant and the parent task id. */
export interface ParentKey {
  tenant: string;
  parentTaskId: string;
}

/** What the log needs of a task to number its events. */
export type EventTask = { id: string } & ParentKey;

/** `<parentTaskId>@<tenant>`: a parentTaskId never holds `@`, so the first one ends it. */
export const parentKey = (k: ParentKey) => `${k.parentTaskId}@${k.tenant}`;

/** An event appended and not yet written: numbered when it is. */
export interface Pending {
  task: EventTask;
  type: EventType;
  at: number;
  dataJson: string;
}

/** An event as written, with its numbers. */
export interface Numbered {
  event: StoredEvent;
  parent: string;
  at: number;
  dataJson: string;
}

/** The columns every read selects, in the order `storedOf` takes them. */
export const EVENT_COLUMNS = 'task_id, seq, type, at, data, parent_seq';

/** A `task_events` row (EVENT_COLUMNS) as the event readers get it. */
export function storedOf(r: unknown[]): StoredEvent {
  const [taskId, seq, type, at, data, parentSeq] = r as [string, number, string, number, string, number | null];
  return {
    taskId,
    seq: Number(seq),
    type: type as EventType,
    parentSeq: parentSeq === null ? undefined : Number(parentSeq),
    json: envelope(Number(seq), type, taskId, Number(at), data, parentSeq === null ? null : Number(parentSeq)),
  };
}

/** The stream message of an event, as its readers get it (the data is stored as JSON already). */
export function envelope(seq: number, type: string, taskId: string, at: number, dataJson: string, parentSeq?: number | null): string {
  const cursor = parentSeq ? `,"parentSeq":${parentSeq}` : '';
  return `{"seq":${seq},"type":${JSON.stringify(type)},"taskId":${JSON.stringify(taskId)}${cursor},"at":"${iso(at)}","data":${dataJson}}`;
}
