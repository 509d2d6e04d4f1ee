import { describe, expect, it, vi } from 'vitest';
import { sharedSlices } from './turns.ts';

/**
 * The slices' clock: only the work below advances it, so what a batch takes is exact however busy
 * the machine running the test is.
 */
let clock = 0;
const now = () => clock;
/** Work of `ms`, as parsing an answer is. */
const busy = (ms: number) => {
  clock += ms;
};
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('sharedSlices', () => {
  it('lets work go on at once while the turn has time, then gives the loop turns, first come first served', async () => {
    const lane = sharedSlices(5, 1, now).lane(0);
    // Within the slice nobody waits.
    expect(lane.enter()).toBeUndefined();
    expect(lane.enter()).toBeUndefined();
    await nextTurn();

    // Sixty answers ready at once, 1 ms of parsing each: the loop takes a turn (an immediate set
    // before them runs) before the last of them, and they run in the order they came.
    const slices = sharedSlices(5, 1, now);
    const answers = slices.lane(0);
    const ran: number[] = [];
    let timerAfter = -1;
    setImmediate(() => void (timerAfter = ran.length));
    await Promise.all(
      Array.from({ length: 60 }, async (_, i) => {
        const turn = answers.enter();
        if (turn) await turn;
        busy(1);
        ran.push(i);
      }),
    );
    expect(ran).toEqual(Array.from({ length: 60 }, (_, i) => i));
    expect(timerAfter).toBeGreaterThan(0);
    expect(timerAfter).toBeLessThan(60);
    expect(slices.waiting).toBe(0);

    // Once they are done a later turn starts a slice of its own.
    await nextTurn();
    expect(answers.enter()).toBeUndefined();
  });

  it('times a batch up to the end of the promise reactions it sets off', async () => {
    // Each waiter's work is 0.25 ms at once and 1 ms more over four awaits. Were only its first
    // step timed, a turn of 5 ms would let about twenty go on; timed whole, about four.
    const lane = sharedSlices(5, 1, now).lane(0);
    let turnNo = 0;
    let stop = false;
    const tick = () => {
      turnNo++;
      if (!stop) setImmediate(tick);
    };
    setImmediate(tick);
    const perTurn = new Map<number, number>();
    await Promise.all(
      Array.from({ length: 80 }, async () => {
        const turn = lane.enter();
        if (turn) await turn;
        busy(0.25);
        for (let step = 0; step < 4; step++) {
          await Promise.resolve();
          busy(0.25);
        }
        if (turn) perTurn.set(turnNo, (perTurn.get(turnNo) ?? 0) + 1);
      }),
    );
    stop = true;
    expect([...perTurn.values()].reduce((a, b) => a + b, 0)).toBeGreaterThan(40);
    expect(Math.max(...perTurn.values())).toBeLessThanOrEqual(10);
  });

  it('gives one turn of the loop one slice: work let go in its poll phase leaves none for its check phase', async () => {
    const slices = sharedSlices(5, 2, now);
    const [writes, reads] = [slices.lane(0), slices.lane(1)];
    // Each turn of the loop counted where it ends (its check phase; this immediate goes first).
    let turnNo = 0;
    let stop = false;
    const tick = () => {
      turnNo++;
      if (!stop) setImmediate(tick);
    };
    const wentOn: Array<{ turn: number; how: 'at once' | 'waited' }> = [];
    await new Promise<void>((resolve) => {
      // A phase before the check phase (a timer here, the poll phase's reads in the service):
      // twenty pieces of work of 1 ms each are ready together, in two lanes.
      setTimeout(() => {
        setImmediate(tick);
        const all = Array.from({ length: 20 }, async (_, i) => {
          const turn = (i % 2 ? reads : writes).enter();
          if (turn) await turn;
          busy(1);
          wentOn.push({ turn: turnNo, how: turn ? 'waited' : 'at once' });
        });
        void Promise.all(all).then(() => resolve());
      }, 0);
    });
    stop = true;
    // The slice's 5 ms (and the piece that crossed it) went on at once; the rest waited.
    const atOnce = wentOn.filter((w) => w.how === 'at once');
    expect(atOnce.length).toBeGreaterThanOrEqual(5);
    expect(atOnce.length).toBeLessThanOrEqual(6);
    expect(wentOn).toHaveLength(20);
    // None of the rest went on in that turn's check phase: it had no slice left.
    expect(wentOn.filter((w) => w.how === 'waited' && w.turn <= 1)).toEqual([]);
    expect(slices.waiting).toBe(0);
  });

  it('shares each turn between lanes: a burst in one does not hold back the other', async () => {
    const slices = sharedSlices(4, 2, now);
    const [submits, answers] = [slices.lane(0), slices.lane(1)];
    const order: string[] = [];
    busy(5);
    const work = (lane: typeof submits, name: string) => async () => {
      const turn = lane.enter();
      if (turn) await turn;
      busy(0.5);
      order.push(name);
    };
    // 200 submits arrive first, then 20 answers: the answers are not all after the submits.
    await Promise.all([...Array.from({ length: 200 }, work(submits, 's')), ...Array.from({ length: 20 }, work(answers, 'a'))]);
    expect(order.filter((n) => n === 'a')).toHaveLength(20);
    expect(order.lastIndexOf('a')).toBeLessThan(100);
    expect(slices.waiting).toBe(0);
  });

  it('gives a lane of one waiter at a time (a queue’s loop) its share while another lane is busy', async () => {
    const slices = sharedSlices(5, 2, now);
    const [answers, writes] = [slices.lane(0), slices.lane(1)];
    let answersDone = 0;
    let answersDoneWhenWritesEnded = -1;
    busy(6);
    // 200 answers of 0.5 ms wait together; a write queue's loop of 100 steps of 0.5 ms asks for
    // its turn before each step, so its lane holds one waiter at a time.
    const reads = Array.from({ length: 200 }, async () => {
      const turn = answers.enter();
      if (turn) await turn;
      busy(0.5);
      answersDone++;
    });
    const loop = (async () => {
      for (let step = 0; step < 100; step++) {
        const turn = writes.enter();
        if (turn) await turn;
        busy(0.5);
      }
      answersDoneWhenWritesEnded = answersDone;
    })();
    await Promise.all([...reads, loop]);
    // Shared evenly, the loop's 50 ms end when about 100 answers are done. Were the loop let go
    // one step per batch of answers, all 200 would be done long before it.
    expect(answersDoneWhenWritesEnded).toBeGreaterThan(50);
    expect(answersDoneWhenWritesEnded).toBeLessThan(150);
    expect(slices.waiting).toBe(0);
  });

  it('a lane that waits again joins the other where it is, whatever it took before', async () => {
    const slices = sharedSlices(2, 2, now);
    const [first, second] = [slices.lane(0), slices.lane(1)];
    const order: string[] = [];
    const work = (lane: typeof first, name: string) => async () => {
      const turn = lane.enter();
      if (turn) await turn;
      busy(0.4);
      order.push(name);
    };
    // The first lane takes a long burst alone, then the second one; the first comes back once the
    // second is a fifth of the way through.
    busy(3);
    await Promise.all(Array.from({ length: 100 }, work(first, 'f')));
    busy(3);
    const long = Promise.all(Array.from({ length: 100 }, work(second, 's')));
    while (order.filter((n) => n === 's').length < 20) await nextTurn();
    const back = order.length;
    busy(3);
    await Promise.all([long, ...Array.from({ length: 10 }, work(first, 'F'))]);
    const after = order.slice(back);
    expect(after.filter((n) => n === 'F')).toHaveLength(10);
    // It shares the turns with the second lane's rest instead of waiting for all of it.
    expect(after.lastIndexOf('F')).toBeLessThan(after.lastIndexOf('s'));
  });

  it('goes on when the timer that ends a turn does not fire (setTimeout faked in a test)', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const slices = sharedSlices(5, 1, now);
      const lane = slices.lane(0);
      let done = 0;
      await Promise.all(
        Array.from({ length: 40 }, async () => {
          const turn = lane.enter();
          if (turn) await turn;
          busy(1);
          done++;
        }),
      );
      expect(done).toBe(40);
      expect(slices.waiting).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('with a slice of 0 lets everything go on at once', () => {
    const off = sharedSlices(0, 2, now);
    busy(2);
    for (let i = 0; i < 100; i++) expect(off.lane(i % 2).enter()).toBeUndefined();
    expect(off.waiting).toBe(0);
  });

  it('keeps each caller’s own order across turns and drops nobody', async () => {
    const slices = sharedSlices(2, 1, now);
    const lane = slices.lane(0);
    const seen = new Map<number, number[]>();
    await Promise.all(
      Array.from({ length: 20 }, async (_, stream) => {
        for (let read = 0; read < 10; read++) {
          const turn = lane.enter();
          if (turn) await turn;
          busy(0.3);
          seen.set(stream, [...(seen.get(stream) ?? []), read]);
        }
      }),
    );
    expect(seen.size).toBe(20);
    for (const reads of seen.values()) expect(reads).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(slices.waiting).toBe(0);
  });
});
