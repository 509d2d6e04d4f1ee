import { afterEach, describe, expect, it } from 'vitest';
import { taskSystems } from '../../test/support/task-systems.ts';
import { createReplayStore } from './replay-store.ts';

describe('the replay store', () => {
  let close: () => Promise<void> = async () => {};
  afterEach(() => close());

  it("lists a tenant's batches newest first, a page at a time, and never another tenant's", async () => {
    const sys = taskSystems();
    close = sys.close;
    const replays = createReplayStore(sys.db.sql);
    const batch = (id: string, tenant: string) =>
      replays.insert({
        id,
        tenant,
        createdAt: sys.clock.now,
        variants: [{ model: 'm' }],
        rows: [{ taskId: 't', variant: 0, replayTaskId: null, error: null }],
      });
    for (const id of ['rpb_1', 'rpb_2', 'rpb_3']) await batch(id, 'acme');
    await batch('rpb_4', 'other');

    const first = await replays.list('acme', 2);
    // limit + 1 rows: the third tells paging.ts there is a next page.
    expect(first.map((b) => b.id)).toEqual(['rpb_3', 'rpb_2', 'rpb_1']);
    expect((await replays.list('acme', 2, 'rpb_2')).map((b) => b.id)).toEqual(['rpb_1']);
    expect((await replays.list('other', 2)).map((b) => b.id)).toEqual(['rpb_4']);
    expect(await replays.list('nobody', 2)).toEqual([]);
    expect(first[0]).toMatchObject({ tenant: 'acme', variants: [{ model: 'm' }], rows: [{ taskId: 't', variant: 0 }] });
  });
});
