/** How long a loop over work that settles at once may hold the event loop before it gives a turn. */
export const SLICE_MS = 10;

/** One kind of work's way through the event loop's shared slice (sharedSlices). */
export interface SliceLane {
  /** Undefined: go on now; a promise: go on once it resolves, at the caller's turn. */
  enter(): Promise<void> | undefined;
}

/** The event loop's slice shared by work that arrives together from outside (sharedSlices). */
export interface LoopSlices {
  /** The lane of one kind of work (from 0): lanes with waiters share each turn's slice evenly. */
  lane(index: number): SliceLane;
  /** How many callers wait for their turn, in every lane. */
  readonly waiting: number;
}

/** Most waiters let go on at once; a turn lets go as many batches as its slice holds. */
const MAX_BATCH = 256;

/** One kind of work's waiters, first come first served, and what its batches have taken. */
interface Lane {
  queue: Array<() => void>;
  head: number;
  /** What its batches have taken while it had waiters, from where it joined the others (ms): the least goes next. */
  spent: number;
  /** What one of its waiters' work has taken, on average (ms). */
  perWaiter: number;
  view: SliceLane;
}

/**
 * One slice of each turn of the event loop, shared by every kind of work that arrives together
 * from outside or settles at once (a fan-out's submits, every model answer's start and reads, the
 * write queue's writes, the tasks' starts: hundreds can be ready in one turn). `enter()` answers
 * undefined while the work of this turn has taken at most `sliceMs` and nobody waits; past it, a
 * promise that resolves at the caller's turn. A turn lasts until the loop's next one begins (its
 * timers): the work let go in its poll phase (reads of sockets) and in its check phase (the
 * waiters' batches) share one slice, so that a turn of the loop holds one slice of this work, not
 * one per phase or per kind. Each later turn lets waiters go on in batches until their work has
 * taken the slice, then gives the loop a turn (timers, sockets) before the next. A batch's work
 * is timed whole: from letting it go to the moment the microtasks it set off are done (a tick
 * queued from a microtask runs only then), so a batch is sized by what its waiters cost, not
 * guessed. Each batch is taken from the lane whose batches have taken least while they waited
 * together, so one kind of work (a burst of submits) cannot hold back another (the answers of
 * running tasks, the writes they wait for), and within a lane first come is first served.
 * Nothing is dropped or reordered: a waiter only goes on later. `sliceMs` 0: everyone goes on at
 * once. `now` is the clock in milliseconds (tests give one that their work advances).
 */
export function sharedSlices(sliceMs = SLICE_MS, lanes = 1, now: () => number = () => performance.now()): LoopSlices {
  if (sliceMs <= 0) {
    const free: SliceLane = { enter: () => undefined };
    return { lane: () => free, waiting: 0 };
  }
  /** When this turn's work began; open until the loop's next turn begins (a timer ends it). */
  let sliceStart = 0;
  let open = false;
  /** The waiters' turn was put off to the next turn of the loop, the slice of this one taken. */
  let deferred = false;
  const all: Lane[] = Array.from({ length: lanes }, (_, index) => ({ queue: [], head: 0, spent: 0, perWaiter: 0.5, view: { enter: () => enter(index) } }));
  let waiting = 0;
  /** Waiters are being let go: a turn is scheduled, or a batch runs. */
  let draining = false;
  const endTurn = () => {
    open = false;
  };
  const openTurn = () => {
    open = true;
    sliceStart = now();
    deferred = false;
    // The loop runs its timers after a turn's check phase, before the next turn's poll phase. An
    // immediate would end this turn in its own check phase, and the batches let go there would
    // take a second slice after the poll phase's.
    setTimeout(endTurn, 0).unref();
  };
  const letGo = () => {
    let lane = all[0];
    for (const l of all) if (l.head < l.queue.length && (lane.head === lane.queue.length || l.spent < lane.spent)) lane = l;
    const start = now();
    const room = sliceMs - (start - sliceStart);
    const end = Math.min(lane.queue.length, lane.head + Math.max(1, Math.min(MAX_BATCH, Math.floor(room / lane.perWaiter))));
    const go = lane.queue.slice(lane.head, end);
    lane.head = end;
    waiting -= go.length;
    if (lane.head === lane.queue.length) {
      lane.queue.length = 0;
      lane.head = 0;
    } else if (lane.head > 1024 && lane.head * 2 > lane.queue.length) {
      lane.queue.splice(0, lane.head);
      lane.head = 0;
    }
    for (const resolve of go) resolve();
    queueMicrotask(() => process.nextTick(() => done(lane, start, go.length)));
  };
  const done = (lane: Lane, start: number, count: number) => {
    const at = now();
    lane.spent += at - start;
    lane.perWaiter = Math.max(0.005, 0.7 * lane.perWaiter + (0.3 * (at - start)) / count);
    if (waiting === 0) draining = false;
    else if (at - sliceStart < sliceMs) letGo();
    else setImmediate(turn);
  };
  const turn = () => {
    if (!open || deferred) openTurn();
    else if (now() - sliceStart >= sliceMs) {
      // This turn's slice is taken (by the reads of its poll phase): the waiters go on in the
      // next. An immediate set now runs there, after the timer that ends this turn; were that
      // timer late (timers faked in a test), the next turn begins there anyway, without it.
      deferred = true;
      setImmediate(turn);
      return;
    }
    letGo();
  };
  function enter(lane: number): Promise<void> | undefined {
    if (waiting === 0) {
      if (!open) {
        openTurn();
        return undefined;
      }
      if (now() - sliceStart <= sliceMs) return undefined;
    }
    const own = all[lane];
    if (own.head === own.queue.length) {
      // A lane that starts waiting joins the others where they are: neither its idle time nor
      // what it took before earns it a place behind, nor more than one slice ahead. A lane of
      // one waiter at a time (the write queue, the starts) empties at each step it is let go:
      // it keeps what it is owed (up to a slice), or the others' batches would fill each turn
      // and it would get one step a batch.
      const busy = all.filter((other) => other !== own && other.head < other.queue.length);
      const where = busy.length > 0 ? Math.min(...busy.map((other) => other.spent)) : 0;
      own.spent = busy.length > 0 ? Math.min(where, Math.max(own.spent, where - sliceMs)) : 0;
    }
    return new Promise<void>((resolve) => {
      own.queue.push(resolve);
      waiting++;
      if (!draining) {
        draining = true;
        setImmediate(turn);
      }
    });
  }
  return {
    lane: (index) => all[index].view,
    get waiting() {
      return waiting;
    },
  };
}
