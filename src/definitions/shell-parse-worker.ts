/**
 * The thread that parses bash lines for shell-commands.ts (shell-parse-thread.mjs), and a line's
 * time to parse. tree-sitter takes seconds on some hostile lines and checks its own cancellation
 * too rarely, so a parse past its time ends the thread.
 */
import { Worker } from 'node:worker_threads';
import type { RawNode } from './shell-node.ts';

/**
 * The parse thread: one per process, started on first use, ended (and started again on the next
 * line) when a parse outlives its time. Lines are parsed one at a time, taken in turn from each
 * key's queue (a tenant's): a tenant that sends many hostile lines, each parsed to its budget,
 * delays another tenant's line by at most one of them, not by all.
 */
export function createParseThread() {
  let worker: Worker | null = null;
  let ready: Promise<void> | null = null;
  /** Lines waiting, by key, the keys in turn order (a key that was served goes to the back). */
  const waiting = new Map<string, Array<() => Promise<void>>>();
  let serving = false;
  let next = 0;
  const serve = async () => {
    if (serving) return;
    serving = true;
    for (const [key, jobs] of waiting) {
      waiting.delete(key);
      const job = jobs.shift()!;
      if (jobs.length > 0) waiting.set(key, jobs);
      await job();
    }
    serving = false;
  };
  const start = () => {
    const w = new Worker(new URL('./shell-parse-thread.mjs', import.meta.url));
    w.unref();
    worker = w;
    ready = new Promise<void>((resolve, reject) => {
      w.once('message', () => resolve());
      w.once('error', reject);
    });
    // Started ahead of its first line, a thread that fails to load is only an error when a line waits on it.
    ready.catch(() => {});
    w.on('error', () => {
      if (worker === w) worker = null;
    });
    return w;
  };
  /**
   * The line's tree, or null for a syntax error or a parse past `deadline` (counted once the thread
   * is up). A line whose `signal` aborted before its turn (its task ended) is dropped unparsed: a
   * tenant cannot keep the queue long with tasks it cancels.
   */
  const parse = (line: string, deadline: Deadline, key = '', signal?: AbortSignal): Promise<RawNode | null> =>
    new Promise((resolve) => {
      const jobs = waiting.get(key) ?? [];
      jobs.push(async () => resolve(signal?.aborted ? null : await parseNow(line, deadline).catch(() => null)));
      waiting.set(key, jobs);
      void serve();
    });
  const parseNow = async (line: string, deadline: Deadline): Promise<RawNode | null> => {
    // A line whose budget its earlier parts spent is not sent (the thread would be ended for it).
    if (deadline.left() <= 0) return null;
    const w = worker ?? start();
    // A thread that does not come up (a machine too loaded to load the grammar) refuses the line,
    // as a parse past its time does, rather than holding every later line behind it.
    if (!(await upWithin(ready!, THREAD_START_MS))) {
      if (worker === w) worker = null;
      void w.terminate();
      return null;
    }
    const ms = deadline.left();
    const id = ++next;
    const started = performance.now();
    return new Promise((resolve) => {
      const timer = setTimeout(
        () => {
          deadline.spend(ms);
          w.off('message', onMessage);
          // A parse cannot be interrupted: the thread goes, and the next line gets a new one.
          void w.terminate();
          // The next thread loads now, while nothing waits for it.
          if (worker === w) start();
          resolve(null);
        },
        Math.max(1, ms),
      );
      const onMessage = (m: { id?: number; tree?: RawNode | null }) => {
        if (m.id !== id) return;
        deadline.spend(performance.now() - started);
        clearTimeout(timer);
        w.off('message', onMessage);
        resolve(m.tree ?? null);
      };
      w.on('message', onMessage);
      w.postMessage({ id, line });
    });
  };
  return { parse };
}

/** How long a new parse thread may take to load its grammar before the line it serves is refused. */
const THREAD_START_MS = 15_000;

const upWithin = (ready: Promise<void>, ms: number): Promise<boolean> => {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  return Promise.race([ready.then(() => true), late]).finally(() => clearTimeout(timer));
};

/**
 * A line's time to parse, the lines it nests included: only the thread's time on them counts, so
 * neither the wait for a new thread (after a hostile line ended the last one) nor the wait behind
 * other tenants' lines between a line and the lines it nests is charged to it.
 */
export interface Deadline {
  left(): number;
  over(): boolean;
  /** Charges a parse's time. */
  spend(ms: number): void;
}
export function deadline(ms: number): Deadline {
  let spent = 0;
  return {
    left: () => ms - spent,
    over: () => spent > ms,
    spend: (t) => void (spent += t),
  };
}
