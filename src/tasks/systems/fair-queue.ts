export interface FairQueueOptions<T> {
  /** The outer level of fairness and quotas (the tenant). */
  groupOf: (item: T) => string;
  /** The inner level, within a group (the tenant's user). */
  keyOf: (item: T) => string;
  /** Items of one group running at once; more of that group wait. */
  maxRunningPerGroup?: number;
}

/**
 * A FIFO per key, served fairly at two levels: the next item comes from the group (tenant) with
 * the fewest items running now, and within it from the key (user) with the fewest running; ties
 * go to the key served longest ago. One tenant's burst of a hundred tasks waits behind another
 * tenant's single task, and a group at its running quota waits whatever else is free. Within a
 * key, submission order holds. The queue also counts what it handed out until `done`.
 */
export function createFairQueue<T>(opts: FairQueueOptions<T>) {
  const { groupOf, keyOf } = opts;
  const maxPerGroup = opts.maxRunningPerGroup ?? Infinity;
  const queues = new Map<string, T[]>();
  const running = new Map<string, number>();
  const queuedPerGroup = new Map<string, number>();
  let size = 0;
  let runningTotal = 0;
  const count = (m: Map<string, number>, k: string) => m.get(k) ?? 0;
  const bump = (m: Map<string, number>, k: string, by: number) => {
    const n = count(m, k) + by;
    if (n <= 0) m.delete(k);
    else m.set(k, n);
  };
  // Groups and keys share one map of running counts; a group name is prefixed so it never equals a key.
  const groupKey = (g: string) => `group\u0000${g}`;
  const unqueue = (item: T) => {
    size--;
    bump(queuedPerGroup, groupOf(item), -1);
  };

  return {
    get size() {
      return size;
    },
    get running() {
      return runningTotal;
    },
    /** Items of `group` waiting now. */
    queuedIn(group: string): number {
      return count(queuedPerGroup, group);
    },
    push(item: T) {
      const key = keyOf(item);
      const q = queues.get(key);
      if (q) q.push(item);
      else queues.set(key, [item]);
      size++;
      bump(queuedPerGroup, groupOf(item), 1);
    },
    /**
     * Next item and marks it running: the head of the fairest key whose group is under its quota;
     * that key then goes to the back. Undefined when nothing may start.
     */
    shift(): T | undefined {
      let key: string | undefined;
      let best = Infinity;
      for (const [k, q] of queues) {
        const g = count(running, groupKey(groupOf(q[0])));
        if (g >= maxPerGroup) continue;
        const score = g * 1e6 + count(running, k);
        if (score < best) {
          best = score;
          key = k;
          if (score === 0) break;
        }
      }
      if (key === undefined) return undefined;
      const q = queues.get(key)!;
      const item = q.shift()!;
      queues.delete(key);
      if (q.length > 0) queues.set(key, q);
      unqueue(item);
      bump(running, key, 1);
      bump(running, groupKey(groupOf(item)), 1);
      runningTotal++;
      return item;
    },
    /** An item `shift` handed out has ended (or, nested, waits for a child and lends its place). */
    done(item: T) {
      bump(running, keyOf(item), -1);
      bump(running, groupKey(groupOf(item)), -1);
      runningTotal--;
    },
    /** An item that lent its place (`done`) runs again, whatever the quota says. */
    retake(item: T) {
      bump(running, keyOf(item), 1);
      bump(running, groupKey(groupOf(item)), 1);
      runningTotal++;
    },
    /** Removes the first queued item matching `pred`; true when one was removed. */
    remove(pred: (item: T) => boolean): boolean {
      for (const [key, q] of queues) {
        const i = q.findIndex(pred);
        if (i === -1) continue;
        const [item] = q.splice(i, 1);
        if (q.length === 0) queues.delete(key);
        unqueue(item);
        return true;
      }
      return false;
    },
  };
}
