import { afterEach, describe, expect, it } from 'vitest';
import { taskSystems } from '../../../test/support/task-systems.ts';
import type { TaskRow } from '../../store/schema.ts';
import { createDispatchSystem } from './dispatch-system.ts';
import type { Scheduler } from './scheduler.ts';
import { sharedSlices } from '../../util/turns.ts';

/** A scheduler over a list the test fills, recording what the dispatcher asks; `gate` holds the next claim. */
function listScheduler() {
  const waiting: TaskRow[] = [];
  const calls: string[] = [];
  let gate: Promise<void> | null = null;
  const scheduler: Scheduler = {
    offer: (row) => void waiting.push(row),
    async next() {
      calls.push('next');
      if (gate) await gate;
      const row = waiting.shift();
      return row && { row, last: waiting.length === 0, alone: waiting.length === 0 };
    },
    done: (row, idle) => void calls.push(`done ${row.id} idle=${idle}`),
    lend: () => undefined,
    withdraw: async () => false,
    waiting: async () => ({ all: waiting.length, tenant: waiting.length }),
  };
  return { scheduler, waiting, calls, hold: (p: Promise<void> | null) => void (gate = p) };
}

/** Runs that end when the test says (`end(id)`). */
function heldRuns() {
  const ends = new Map<string, () => void>();
  return {
    run: (row: TaskRow) => new Promise<TaskRow>((resolve) => ends.set(row.id, () => resolve({ ...row, status: 'completed' }))),
    end: (id: string) => ends.get(id)!(),
    running: () => [...ends.keys()],
  };
}

const settle = () => new Promise((r) => setTimeout(r, 20));

describe('the dispatcher', () => {
  let close: () => Promise<void> = async () => {};
  afterEach(() => close());

  it('after an end with nothing waiting at its last claim, neither claims nor announces the freed slot; a task offered later still starts', async () => {
    const runs = heldRuns();
    const sys = taskSystems({ runner: { run: runs.run }, maxConcurrent: 1 });
    close = sys.close;
    const { scheduler, calls } = listScheduler();
    const dispatch = createDispatchSystem(sys.res, scheduler, null);
    scheduler.offer(await sys.task('t1', 'general'));
    await dispatch.pump();
    expect(calls).toEqual(['next']);
    runs.end('t1');
    await settle();
    expect(calls).toEqual(['next', 'done t1 idle=true']);
    // Something changed (a task stored): the pump asks again, and the task runs.
    scheduler.offer(await sys.task('t2', 'general'));
    await dispatch.pump();
    expect(runs.running()).toEqual(['t1', 't2']);
    // Stored while the only slot is taken: no claim now, but the end of t2 looks for work.
    scheduler.offer(await sys.task('t3', 'general'));
    await dispatch.pump();
    runs.end('t2');
    await settle();
    expect(calls).toEqual(['next', 'done t1 idle=true', 'next', 'done t2 idle=false', 'next']);
    expect(runs.running()).toEqual(['t1', 't2', 't3']);
  });

  it('does not take a claim for the last word when a pump was asked for while it ran (a task stored meanwhile)', async () => {
    const runs = heldRuns();
    const sys = taskSystems({ runner: { run: runs.run }, maxConcurrent: 1 });
    close = sys.close;
    const { scheduler, calls, hold } = listScheduler();
    const dispatch = createDispatchSystem(sys.res, scheduler, null);
    scheduler.offer(await sys.task('t1', 'general'));
    let open!: () => void;
    hold(new Promise<void>((r) => (open = r)));
    const first = dispatch.pump();
    // Heard of while the claim runs; the claim still finds t1 alone, as it read before.
    void dispatch.pump();
    hold(null);
    open();
    await first;
    runs.end('t1');
    await settle();
    expect(calls).toEqual(['next', 'done t1 idle=false', 'next']);
  });

  it('starts nothing once a close has begun while its starts waited for their turn of the loop', async () => {
    const runs = heldRuns();
    const slices = sharedSlices(5, 2);
    const sys = taskSystems({ runner: { run: runs.run }, maxConcurrent: 10, startSlice: slices.lane(1) });
    close = sys.close;
    const { scheduler, calls } = listScheduler();
    const dispatch = createDispatchSystem(sys.res, scheduler, null);
    for (let i = 0; i < 3; i++) scheduler.offer(await sys.task(`t${i}`, 'general'));
    // Other work (a burst of requests) has taken this turn's slice: the starts wait for the next.
    expect(slices.lane(0).enter()).toBeUndefined();
    const until = performance.now() + 6;
    while (performance.now() < until);
    const pumped = dispatch.pump();
    // The close begins before their turn comes.
    sys.res.state.closing = true;
    await pumped;
    expect(calls).toEqual([]);
    expect(runs.running()).toEqual([]);
  });
});
