import { createOpenAI } from '@ai-sdk/openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSubagentClient, createTaskTool, type ApprovalRequestInfo, type TaskProgress } from '@subagentd/client';
import { tool } from 'ai';
import { z } from 'zod';
import { orchestrate, type OrchestrateOptions } from '../examples/orchestrator';
import { startService, storedEvents, taskEnd, TEST_API_KEY, type TestService } from './support/harness';

/**
 * A parent ai-SDK loop (examples/orchestrator.ts) with `createTaskTool` against a real service,
 * both talking to the scripted model: seed 003's four delegation prompts, end to end.
 */
let svc: TestService;
const parent = () => createOpenAI({ baseURL: `${svc.model.url}/v1`, apiKey: TEST_API_KEY }).chat('parent-model');
const client = () => createSubagentClient({ baseUrl: svc.url });

beforeAll(async () => {
  svc = await startService({ env: { HEARTBEAT_MS: '100' } });
});
afterAll(() => svc.close());

/** The parent: turn 0 calls `task` with `args`; turn 1 answers with `answer(compacted result)`. */
function scriptParent(marker: string, args: Record<string, unknown>, answer: (result: any) => string) {
  svc.model.script(marker, (ctx) =>
    ctx.turn === 0
      ? { toolCalls: [{ name: 'task', args }], usage: { input: 50, output: 20 } }
      : { text: answer(JSON.parse(ctx.toolResults[0].content)), usage: { input: 80, output: 5 } },
  );
}

/** A general subagent that runs `command` with bash, then completes with `done(stdout)`. */
function scriptBashSubagent(marker: string, done: (stdout: string) => Record<string, unknown>) {
  svc.model.script(marker, (ctx) =>
    ctx.turn === 0
      ? { toolCalls: [{ name: 'bash', args: { command: String(ctx.messages.find((m) => m.role === 'user')!.content).split('RUN: ')[1] } }] }
      : { toolCalls: [{ name: 'complete', args: { paths: [], ...done(JSON.parse(ctx.toolResults[0].content).stdout) } }] },
  );
}

const run = (prompt: string, onProgress?: (p: TaskProgress) => void, abortSignal?: AbortSignal, callers: Partial<OrchestrateOptions> = {}) =>
  orchestrate({ model: parent(), client: client(), parentTaskId: 'T-orch', userId: 'u-orch', prompt, onProgress, abortSignal, ...callers });

describe('an orchestrator with the task tool', () => {
  it('a subagent runs a pipeline and returns its second line: beta', async () => {
    scriptBashSubagent('SUB-PIPELINE', (stdout) => ({ summary: stdout.trim() }));
    scriptParent(
      'ORCH-PIPELINE',
      { subagent_type: 'general', description: 'Second line of a pipeline', prompt: "SUB-PIPELINE RUN: printf 'alpha\\nbeta\\ngamma\\n' | sed -n '2p'" },
      (r) => r.summary,
    );
    const progress: TaskProgress[] = [];
    const { text } = await run("ORCH-PIPELINE: have a subagent run printf 'alpha\\nbeta\\ngamma\\n' | sed -n '2p'; return only the second line", (p) =>
      progress.push(p),
    );
    expect(text).toBe('beta');
    // Progress arrived as preliminary results while the subagent worked.
    expect(progress.map((p) => p.event)).toEqual(expect.arrayContaining(['task.started', 'tool.call', 'tool.result', 'step.finished']));
    expect(progress.find((p) => p.event === 'tool.call')?.toolName).toBe('bash');
    // The parent model saw only the compacted result: id, status, summary, output, artifact pointers.
    const toolMessage = svc.model.requests
      .filter((r) => r.body.model === 'parent-model')
      .at(-1)!
      .body.messages.find((m) => m.role === 'tool')!;
    const seen = JSON.parse(String(toolMessage.content));
    expect(Object.keys(seen).sort()).toEqual(['artifacts', 'output', 'status', 'summary', 'task_id']);
    expect(seen).toMatchObject({ status: 'completed', summary: 'beta', output: null, artifacts: [] });
    // The subagent ran with the parent's context and this tool call's id.
    const task = await client().tasks.get(seen.task_id);
    expect(task.context).toMatchObject({ parentTaskId: 'T-orch', userId: 'u-orch' });
    expect(task.context.toolCallId).toMatch(/.+/);
  });

  it('a subagent returns structured JSON through outputSchema: {"ok":true,"value":42}', async () => {
    scriptBashSubagent('SUB-JSON', (stdout) => ({ summary: 'structured result', output: JSON.parse(stdout) }));
    scriptParent(
      'ORCH-JSON',
      {
        subagent_type: 'general',
        description: 'Structured JSON',
        prompt: `SUB-JSON RUN: echo '{"ok":true,"value":42}'`,
        output_schema: {
          type: 'object',
          properties: { ok: { type: 'boolean' }, value: { type: 'number' } },
          required: ['ok', 'value'],
          additionalProperties: false,
        },
      },
      (r) => JSON.stringify(r.output),
    );
    const { text } = await run(`ORCH-JSON: only bash in the subagent; run echo '{"ok":true,"value":42}' and return only the JSON`);
    expect(JSON.parse(text)).toEqual({ ok: true, value: 42 });
    expect(text).toBe('{"ok":true,"value":42}');
  });

  it('a shell subtask returns the last line: three', async () => {
    scriptParent('ORCH-SHELL-1', { subagent_type: 'shell', description: 'Last line', prompt: "printf 'one\\ntwo\\nthree\\n' | tail -n 1" }, (r) =>
      r.output.stdout.trim(),
    );
    const { text } = await run("ORCH-SHELL-1: run printf 'one\\ntwo\\nthree\\n' | tail -n 1 in a subtask; only the last line");
    expect(text).toBe('three');
  });

  it('a shell subtask that takes a second returns its stdout: SUBAGENT_BASH_OK', async () => {
    scriptParent('ORCH-SHELL-2', { subagent_type: 'shell', description: 'Slow echo', prompt: 'sleep 1; echo SUBAGENT_BASH_OK' }, (r) => r.output.stdout.trim());
    const { text } = await run('ORCH-SHELL-2: run sleep 1; echo SUBAGENT_BASH_OK in a subtask; reply with stdout only');
    expect(text).toBe('SUBAGENT_BASH_OK');
  });

  it('cancels the subagent when the parent is aborted', async () => {
    svc.model.script('SUB-FOREVER', () => ({ delayMs: 200, toolCalls: [{ name: 'bash', args: { command: 'sleep 0.2' } }] }));
    scriptParent('ORCH-ABORT', { subagent_type: 'general', description: 'Never ends', prompt: 'SUB-FOREVER' }, () => 'unreachable');
    const abort = new AbortController();
    let taskId: string | undefined;
    const outcome = run(
      'ORCH-ABORT',
      (p) => {
        taskId = p.taskId;
        if (p.event === 'step.finished') abort.abort();
      },
      abort.signal,
    ).catch((err) => err);
    expect(await outcome).toBeInstanceOf(Error);
    expect(taskId).toMatch(/^tsk_/);
    const ended = await taskEnd(svc, taskId!);
    expect(ended.status).toBe('aborted');
    expect(ended.error.code).toBe('cancelled');
  });

  it("answers a subagent's approvals and runs its calls of the orchestrator's own tools, in the orchestrator's process", async () => {
    svc.model.script('SUB-ASKS', (ctx) =>
      ctx.turn === 0
        ? {
            toolCalls: [
              { name: 'bash', args: { command: 'echo approved' } },
              { name: 'bash', args: { command: 'rm -rf /tmp/nothing' } },
              { name: 'parent_notes', args: { topic: 'release' } },
            ],
          }
        : { toolCalls: [{ name: 'complete', args: { paths: [], summary: ctx.toolResults.map((r) => r.content).join(' | ') } }] },
    );
    scriptParent('ORCH-ASKS', { subagent_type: 'general', description: 'Asks first', prompt: 'SUB-ASKS' }, (r) => r.summary);
    const asked: ApprovalRequestInfo[] = [];
    const notesCalls: string[] = [];
    const { text } = await run('ORCH-ASKS', undefined, undefined, {
      permissions: { bash: 'ask' },
      onApproval: async (request) => {
        asked.push(request);
        return String((request.input as { command: string }).command).startsWith('rm') ? { decision: 'deny', message: 'not that one' } : 'allow';
      },
      clientTools: {
        parent_notes: tool({
          description: "The orchestrator's notes",
          inputSchema: z.object({ topic: z.string() }),
          execute: async ({ topic }) => {
            notesCalls.push(topic);
            return { notes: `NOTES-ON-${topic}` };
          },
        }),
      },
    });
    // Asked concurrently: in whichever order their checks come back.
    expect(asked.map((a) => (a.input as { command: string }).command).sort()).toEqual(['echo approved', 'rm -rf /tmp/nothing']);
    expect(asked[0]).toMatchObject({ subagentType: 'general', toolName: 'bash', requestId: expect.stringMatching(/^apr_/) });
    expect(notesCalls).toEqual(['release']);
    // The subagent read the allowed command's output, the denial, and the orchestrator's notes.
    expect(text).toContain('approved');
    expect(text).toContain('not that one');
    expect(text).toContain('NOTES-ON-release');
    const events = await storedEvents(svc, asked[0].taskId);
    // Answered concurrently, each once, by the caller.
    const answered = events.filter((e) => e.type === 'approval.answered' || e.type === 'tool.answered').map((e) => e.data);
    expect(answered).toHaveLength(3);
    expect(answered).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ decision: 'allow', by: 'caller' }),
        expect.objectContaining({ decision: 'deny', by: 'caller' }),
        { requestId: expect.stringMatching(/^tlr_/), by: 'caller', isError: false },
      ]),
    );
  });

  it("offers the service's definitions as the subagent_type enum, each with its description", async () => {
    const tool = await createTaskTool({ client: client(), context: { parentTaskId: 'T-orch', userId: 'u-orch' } });
    const json = z.toJSONSchema(tool.inputSchema as z.ZodType) as any;
    expect(json.properties.subagent_type.enum).toEqual(['general', 'explore', 'plan', 'shell']);
    expect(json.properties.subagent_type.description).toContain('- explore:');
    expect(json.properties.description.maxLength).toBe(80);
    expect(json.required).toEqual(['subagent_type', 'description', 'prompt']);
  });
});
