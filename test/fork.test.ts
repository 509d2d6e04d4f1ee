import { createOpenAI } from '@ai-sdk/openai';
import { streamText, type ModelMessage } from 'ai';
import { describe, expect, it } from 'vitest';
import { serviceForTests, taskBody, TEST_API_KEY } from './support/harness';

/**
 * Fork mode: a child that inherits its parent's conversation. The parent here is a real ai-SDK
 * call against the scripted model; the child's requests must begin with the very bytes the
 * parent's did, so the provider's prompt cache applies.
 */
const file = serviceForTests();

const system = 'You are the orchestrator of FORK-TEST. Plan, then delegate.';
const messages: ModelMessage[] = [
  { role: 'user', content: 'FORK-PARENT: build the release notes from CHANGES.md' },
  {
    role: 'assistant',
    content: [
      { type: 'text', text: 'I will read the changes first.' },
      { type: 'tool-call', toolCallId: 'call_p1', toolName: 'read_file', input: { path: 'CHANGES.md' } },
    ],
  },
  {
    role: 'tool',
    content: [{ type: 'tool-result', toolCallId: 'call_p1', toolName: 'read_file', output: { type: 'text', value: '- fix: a crash\n- feat: forks' } }],
  },
];

const post = (payload: object) => file.svc.inject({ method: 'POST', url: '/tasks?wait=true', payload });
const lastUser = (msgs: Array<{ role: string; content?: unknown }>) => JSON.stringify(msgs.filter((m) => m.role === 'user').at(-1)?.content ?? '');

describe('fork mode', () => {
  it("starts a child whose requests begin with the parent's system prompt and messages, byte for byte", async () => {
    // One script for the whole conversation: the parent's turn, then the child's (told apart by its prompt).
    file.svc.model.script('FORK-PARENT', (ctx) =>
      lastUser(ctx.messages).includes('FORK-CHILD')
        ? { text: 'the notes are in NOTES.md', usage: { input: 1200, cached: 1024, output: 8 } }
        : { text: 'parent continues', usage: { input: 1100, output: 3 } },
    );
    // The parent, as an ai-SDK orchestrator sends it.
    const parent = createOpenAI({ baseURL: `${file.svc.model.url}/v1`, apiKey: TEST_API_KEY }).chat('parent-model');
    await streamText({ model: parent, system, messages }).consumeStream();
    const parentRequest = file.svc.model.requests.at(-1)!.body;

    const res = await post({
      description: 'Write the notes',
      prompt: 'FORK-CHILD: now write NOTES.md',
      context: { parentTaskId: 'T-fork', userId: 'u' },
      fork: { system, messages },
    });
    expect(res.statusCode, res.body).toBe(200);
    const child = JSON.parse(res.body.trim());
    expect(child).toMatchObject({ status: 'completed', subagent_type: 'fork', summary: 'the notes are in NOTES.md' });
    // The provider reported its prompt cache at work, and the task bills it as cached input.
    expect(child.usage).toMatchObject({ inputTokens: 1200, cachedInputTokens: 1024, outputTokens: 8 });

    const childRequest = file.svc.model.requests.at(-1)!.body;
    const prefix = parentRequest.messages.length;
    expect(JSON.stringify(childRequest.messages.slice(0, prefix))).toBe(JSON.stringify(parentRequest.messages));
    expect(childRequest.messages.slice(prefix)).toEqual([{ role: 'user', content: 'FORK-CHILD: now write NOTES.md' }]);
    // With the general definition's tools.
    expect(childRequest.tools!.map((t) => t.function.name)).toContain('write_file');

    // A fork of a fork is refused; the fork itself can be continued, still speaking as the parent.
    const again = await post({
      task_id: child.id,
      description: 'Fork again',
      prompt: 'FORK-CHILD again',
      context: { parentTaskId: 'T-fork', userId: 'u' },
      fork: { system, messages },
    });
    expect([again.statusCode, again.json().error.code]).toEqual([400, 'fork_in_fork']);
    const followUp = await post({
      task_id: child.id,
      subagent_type: 'fork',
      description: 'Continue the fork',
      prompt: 'FORK-CHILD: and a title',
      context: { parentTaskId: 'T-fork', userId: 'u' },
    });
    expect(JSON.parse(followUp.body.trim())).toMatchObject({ status: 'completed', sessionId: child.id });
    const followRequest = file.svc.model.requests.at(-1)!.body;
    expect(JSON.stringify(followRequest.messages.slice(0, prefix))).toBe(JSON.stringify(parentRequest.messages));
  });

  it('refuses a fork with another type, messages the SDK would refuse, and a body with neither type nor fork', async () => {
    const typed = await post(taskBody({ fork: { system, messages } }));
    expect([typed.statusCode, typed.json().error.details[0].field]).toEqual([400, 'body.subagent_type']);
    const broken = await post({
      description: 'Broken fork',
      prompt: 'go',
      context: { parentTaskId: 'T-fork', userId: 'u' },
      fork: { system, messages: [{ role: 'assistant', content: [{ type: 'no-such-part' }] }] },
    });
    expect([broken.statusCode, broken.json().error.details[0].field]).toEqual([400, 'body.fork.messages.0']);
    const neither = await post({ description: 'No type', prompt: 'go', context: { parentTaskId: 'T-fork', userId: 'u' } });
    expect([neither.statusCode, neither.json().error.details[0].field]).toEqual([400, 'body.subagent_type']);
    // GET /agents does not offer "fork" as a type of its own.
    expect((await file.svc.inject({ url: '/agents' })).json().agents.map((a: { type: string }) => a.type)).not.toContain('fork');
  });
});
