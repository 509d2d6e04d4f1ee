import { iso } from '../shapes/time.ts';
import type { EventTuple } from '../store/event-store.ts';
import type { EventData, EventType, StoredEvent } from './event-types.ts';

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

/** An event appended at `at`, to be written. */
export function pendingOf<T extends EventType>(task: EventTask, type: T, data: EventData[T], at: number): Pending {
  return { task: { id: task.id, tenant: task.tenant, parentTaskId: task.parentTaskId }, type, at, dataJson: JSON.stringify(data) };
}

/** An event as written, with its numbers. */
export interface Numbered {
  event: StoredEvent;
  parent: string;
  at: number;
  dataJson: string;
}

/** A `task_events` row as the event readers get it. */
export function storedOf(r: EventTuple): StoredEvent {
  const [taskId, seq, type, at, data, parentSeq] = r;
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
