/**
 * A FIFO per key, served fairly across keys: the next item comes from the key with the fewest
 * items running now (ties: the key served longest ago), so one user's burst of a hundred tasks
 * waits behind another user's single task instead of in front of it. Within a key, submission
 * order holds.
 */
export function createFairQueue<T>(keyOf: (item: T) => string) {
  const queues = new Map<string, T[]>();
  let size = 0;
  return {
    keyOf,
    get size() {
      return size;
    },
    push(item: T) {
      const key = keyOf(item);
      const q = queues.get(key);
      if (q) q.push(item);
      else queues.set(key, [item]);
      size++;
    },
    /**
     * Next item: the head of the key with the fewest running items (`running` tells, default none),
     * ties going to the key served longest ago; that key then goes to the back.
     */
    shift(running: (key: string) => number = () => 0): T | undefined {
      let key: string | undefined;
      let best = Infinity;
      for (const k of queues.keys()) {
        const r = running(k);
        if (r < best) {
          best = r;
          key = k;
          if (r === 0) break;
        }
      }
      if (key === undefined) return undefined;
      const q = queues.get(key)!;
      const item = q.shift()!;
      queues.delete(key);
      if (q.length > 0) queues.set(key, q);
      size--;
      return item;
    },
    /** Removes the first item matching `pred`; true when one was removed. */
    remove(pred: (item: T) => boolean): boolean {
      for (const [key, q] of queues) {
        const i = q.findIndex(pred);
        if (i === -1) continue;
        q.splice(i, 1);
        if (q.length === 0) queues.delete(key);
        size--;
        return true;
      }
      return false;
    },
    /** Empties the queue, returning its items in serving order. */
    drain(): T[] {
      const all: T[] = [];
      for (let item = this.shift(); item !== undefined; item = this.shift()) all.push(item);
      return all;
    },
  };
}
