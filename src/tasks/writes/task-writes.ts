/**
 * Every write of a task that crosses domains, one named operation each: billing a model call,
 * ending the task, storing the answers to its approvals, and the run's own writes (`owned`,
 * `holdOwned`: a step's end, its messages, a pause). Each is one transaction of the event log, and
 * reads, in the order it happens:
 *
 *   1. the writes the task held for its next transaction (`holdOwned`), first;
 *   2. the task's rows (store/task-store.ts), by the operation's body;
 *   3. its events, numbered in order: those still waiting in the open batch, then the body's
 *      (events/event-log.ts);
 *   4. the webhook outbox rows of those events (the event log's `outbox`, webhooks/);
 *   5. commit (PostgreSQL, `owned`: only while this instance still owns the task, else
 *      `TaskTakenOver` and nothing is written);
 *   6. the events published to live readers;
 *   7. the webhook dispatcher poked, when the outbox took a row.
 *
 * Steps 3 to 7 are the event log's: a body writes rows through the store it is given and appends
 * events; whatever it writes commits with its events or not at all.
 */
import type { Append, EventLog } from '../../events/event-log.ts';
import type { ApprovalAnswer, ApprovalPause, TokenUsage, ToolAnswer } from '../../shapes/task.ts';
import type { TaskRow, WaitingCalls } from '../../store/schema.ts';
import type { SqlClient } from '../../store/sql-client.ts';
import { createTaskStore, type TaskStore } from '../../store/task-store.ts';
import type { Ending } from './finish-task.ts';
import { toTaskOutput } from './task-output.ts';

/** A write of a task: its rows through `store`, its events through `append`. */
export type TaskWrite<R> = (store: TaskStore, append: Append) => Promise<R>;

/** A model call's usage as billed: its step, model and price, and the key that makes a repeated write count once. */
export interface Bill {
  step: number;
  usage: TokenUsage;
  model: string;
  costMicroUsd: number | null;
  at: number;
  callKey: string;
}

/** `instanceId` (PostgreSQL): a run's writes are stored only while this instance owns the task. */
export function createTaskWrites(deps: { events: EventLog; instanceId?: string | null }) {
  const { events } = deps;
  const owns = (deps.instanceId ?? null) !== null;
  /**
   * The store of a transaction's client, built once per client: SQLite's transactions share one
   * (building the store's closures at every write was a tenth of a millisecond a step), and
   * PostgreSQL's each have their own, which goes with it.
   */
  const stores = new WeakMap<SqlClient, TaskStore>();
  const storeOf = (tx: SqlClient) => {
    let store = stores.get(tx);
    if (!store) stores.set(tx, (store = createTaskStore(tx)));
    return store;
  };
  const write = <R>(row: Pick<TaskRow, 'id'>, body: TaskWrite<R>, owned = false) =>
    events.transaction(row.id, (tx, append) => body(storeOf(tx), append), { owned });

  return {
    /** A write of the run that owns the task (on PostgreSQL, refused once another instance took it over). */
    owned: (row: TaskRow, body: TaskWrite<void>): Promise<void> => write(row, body, owns),

    /** `body`, an owned write, runs first in the task's next transaction (or the event log's `flush`). */
    holdOwned(row: TaskRow, body: TaskWrite<void>): void {
      events.holdWrite(row.id, (tx, append) => body(storeOf(tx), append), { owned: owns });
    },

    /**
     * Bills a model call the moment it ends, with the task's events still waiting to be written
     * (the step's), before it: one commit.
     */
    bill: (row: TaskRow, b: Bill): Promise<void> =>
      write(row, (s) => s.addUsage(row.id, b.step, b.usage, { model: b.model, costMicroUsd: b.costMicroUsd }, b.at, b.callKey)),

    /**
     * Ends the task: after the writes asked for before it (the task's events appended so far among
     * them), its end state with its usage record closed, then `task.finished` with the final
     * TaskOutput. Every path that ends a task goes through here.
     */
    finish: (row: TaskRow, ending: Ending, completedAt: number): Promise<TaskRow> =>
      write(row, async (s, append) => {
        const finished = await s.finish(row.id, { ...ending, completedAt }, deps.instanceId ?? null);
        append(row, 'task.finished', toTaskOutput(finished));
        return finished;
      }),

    /**
     * Stores the answers to a step's waiting calls if nobody answered meanwhile (`before` is what
     * was read), with an `approval.answered` or `tool.answered` event each (request id → answer);
     * whether they were stored.
     */
    answerApprovals: (
      row: TaskRow,
      change: { before: WaitingCalls; after: WaitingCalls; pause: ApprovalPause | null; resume: boolean; at: number },
      answers: Map<string, ApprovalAnswer | ToolAnswer>,
    ): Promise<boolean> =>
      write(row, async (s, append) => {
        const ok = await s.answerApprovals(row.id, change.before, change.after, change.pause, change.resume, change.at);
        if (!ok) return false;
        for (const [requestId, a] of answers) {
          if ('decision' in a) append(row, 'approval.answered', { requestId, decision: a.decision, by: a.by });
          else append(row, 'tool.answered', { requestId, by: a.by, isError: a.by === 'timeout' || a.error !== undefined });
        }
        return true;
      }),
  };
}

export type TaskWrites = ReturnType<typeof createTaskWrites>;
