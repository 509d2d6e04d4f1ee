import { afterEach, describe, expect, it } from 'vitest';
import { taskSystems } from '../../../test/support/task-systems.ts';
import { builtinAgents, createAgentRegistry } from '../../definitions/agent-registry.ts';
import { createModelProvider } from '../../loop/model-provider.ts';
import type { CreateTaskBody } from '../../shapes/task.ts';
import { failed } from '../writes/finish-task.ts';
import { checkAgainstDefinition, checkQueueRoom, earlierTask, newTaskRow, sessionOf, storageRefusal } from './admission.ts';
import { localScheduler } from './scheduler.ts';

const registry = createAgentRegistry(builtinAgents({ defaultModel: 'm', smallModel: 's' }));
const models = createModelProvider({ connections: { openai: { type: 'openai', apiKey: 'k' } }, defaultProvider: 'openai' });
const body = (more: Partial<CreateTaskBody> = {}): CreateTaskBody => ({
  subagent_type: 'general',
  description: 'd',
  prompt: 'p',
  context: { parentTaskId: 'P', userId: 'u' },
  ...more,
});

describe('a body checked against its definition', () => {
  it('passes when the definition allows everything it asks', () => {
    expect(() =>
      checkAgainstDefinition(registry, body({ options: { maxSteps: 10, model: 'openai:gpt-x', cwd: 'src', tools: ['read_file'] } }), '/ws', models),
    ).not.toThrow();
  });

  it('refuses an unknown type, naming the ones there are', () => {
    expect(() => checkAgainstDefinition(registry, body({ subagent_type: 'nope' }))).toThrow(
      expect.objectContaining({ statusCode: 400, code: 'unknown_subagent_type', details: { available: ['general', 'explore', 'plan', 'shell'] } }),
    );
  });

  it('reports every problem at once: a raised step limit, an unknown provider, a cwd outside, a bad path rule, a bad output schema', () => {
    const asked = body({
      options: {
        maxSteps: 51,
        model: ['openai:gpt-x', 'nope:m'],
        cwd: '../elsewhere',
        permissions: { 'write_file(/etc/**)': 'allow' },
        outputSchema: { type: 'no-such-type' },
      },
    });
    let error: unknown;
    try {
      checkAgainstDefinition(registry, asked, '/ws', models);
    } catch (err) {
      error = err;
    }
    expect(error).toMatchObject({ statusCode: 400, code: 'invalid_request' });
    expect((error as { details: Array<{ field: string }> }).details.map((d) => d.field)).toEqual([
      'body.options.model.1',
      'body.options.maxSteps',
      'body.options.cwd',
      'body.options.permissions.write_file(/etc/**)',
      'body.options.outputSchema',
    ]);
  });

  it("refuses a tool list that leaves none of the definition's tools (400 no_tools)", () => {
    expect(() => checkAgainstDefinition(registry, body({ subagent_type: 'explore', options: { tools: ['bash'] } }))).toThrow(
      expect.objectContaining({ statusCode: 400, code: 'no_tools' }),
    );
  });
});

describe('admitting a task', () => {
  let close: () => Promise<void> = async () => {};
  afterEach(() => close());

  it('answers an Idempotency-Key with its first task for the same body within 24 h, 409 for another body, and frees it after', async () => {
    const sys = taskSystems();
    close = sys.close;
    await sys.store.insert(newTaskRow('t-1', 'default', body(), sys.clock.now, { key: 'k1', requestHash: 'h1' }, null));
    expect((await earlierTask(sys.store, 'default', 'k1', 'h1', sys.clock.now))?.id).toBe('t-1');
    expect(await earlierTask(sys.store, 'other', 'k1', 'h1', sys.clock.now)).toBeNull();
    await expect(earlierTask(sys.store, 'default', 'k1', 'h2', sys.clock.now)).rejects.toMatchObject({ statusCode: 409, code: 'idempotency_conflict' });
    const later = sys.clock.now + 24 * 3600_000;
    expect(await earlierTask(sys.store, 'default', 'k1', 'h2', later)).toBeNull();
    expect(await sys.store.findByIdempotencyKey('default', 'k1')).toBeUndefined();
  });

  it('continues a finished task of the same type and parent, and refuses any other', async () => {
    const sys = taskSystems();
    close = sys.close;
    expect(await sessionOf(sys.store, 'default', body())).toBeNull();
    await expect(sessionOf(sys.store, 'default', body({ task_id: 't-none' }))).rejects.toMatchObject({ statusCode: 404 });
    const running = await sys.task('t-1', 'general', 'running');
    await expect(sessionOf(sys.store, 'default', body({ task_id: 't-1' }))).rejects.toMatchObject({ statusCode: 409, code: 'task_not_finished' });
    await sys.res.finish(running, failed('tool_error', 'x'), sys.clock.now);
    await expect(sessionOf(sys.store, 'other', body({ task_id: 't-1' }))).rejects.toMatchObject({ statusCode: 404 });
    await expect(sessionOf(sys.store, 'default', body({ task_id: 't-1', subagent_type: 'explore' }))).rejects.toMatchObject({
      statusCode: 400,
      code: 'session_mismatch',
    });
    expect(await sessionOf(sys.store, 'default', body({ task_id: 't-1' }))).toEqual({ sessionId: 't-1', previousTaskId: 't-1' });
  });

  it("refuses a task with 429 queue_full once the queue, or the tenant's share of it, is full, counting those being stored", async () => {
    const scheduler = localScheduler(1);
    const bounds = { maxQueued: 3, maxQueuedPerTenant: 2 };
    const admitting = new Map<string, string>();
    await checkQueueRoom(scheduler, admitting, bounds, 'A');
    scheduler.offer(newTaskRow('a1', 'A', body(), 0, null, null));
    admitting.set('a2', 'A');
    const full = checkQueueRoom(scheduler, admitting, bounds, 'A');
    await expect(full).rejects.toMatchObject({ statusCode: 429, code: 'queue_full', headers: { 'retry-after': '5' } });
    await expect(checkQueueRoom(scheduler, admitting, bounds, 'A')).rejects.toThrow(/MAX_QUEUED_PER_TENANT/);
    // Another tenant still has room, until the whole queue is full.
    await checkQueueRoom(scheduler, admitting, bounds, 'B');
    admitting.set('b1', 'B');
    await expect(checkQueueRoom(scheduler, admitting, bounds, 'B')).rejects.toThrow(/too many queued tasks \(3\)/);
  });

  it('answers 507 on a full disk and 503 while the database cannot be written', () => {
    expect(storageRefusal('storage_full')).toMatchObject({ statusCode: 507, code: 'storage_full' });
    expect(storageRefusal('storage_unavailable')).toMatchObject({ statusCode: 503, code: 'storage_unavailable' });
  });
});
