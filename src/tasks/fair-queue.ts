/**
 * A FIFO per key, served round-robin across keys: one user's burst of a hundred tasks waits behind
 * another user's single task instead of in front of it. Within a key, submission order holds.
 */
export function createFairQueue<T>(keyOf: (item: T) => string) {
  const queues = new Map<string, T[]>();
  let size = 0;
  return {
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
    /** Next item: the head of the key served longest ago; that key then goes to the back. */
    shift(): T | undefined {
      const first = queues.entries().next();
      if (first.done) return undefined;
      const [key, q] = first.value;
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
