/**
 * An orchestrator on the ai SDK with subagentd's `task` tool: the parent model delegates, the
 * subagents run in subagentd, the parent keeps only each task's summary, output and file pointers.
 * Run directly, the subagents ask before each command (the terminal's user answers y/N), and may
 * call `parent_notes`, a tool that runs here, in the orchestrator's process.
 *
 *   SUBAGENTD_URL=http://127.0.0.1:8787 OPENAI_API_KEY=sk-... npx tsx examples/orchestrator.ts "Summarise the errors in logs/"
 *
 * (`npm start` runs the service; with API_KEYS set, give SUBAGENTD_API_KEY too.) Offline, against
 * `npm run model` and a service started on it as the README shows, add
 * `OPENAI_BASE_URL=http://127.0.0.1:8788/v1 OPENAI_API_KEY=scripted`: its scripted parent delegates
 * the prompt to one subagent. test/orchestrator.test.ts runs `orchestrate` below against the scripted
 * model, test/readme-examples.test.ts runs this file as written.
 */
import { createOpenAI } from '@ai-sdk/openai';
import { createInterface } from 'node:readline/promises';
import { stepCountIs, streamText, tool, type LanguageModel, type Tool } from 'ai';
import { z } from 'zod';
import { createSubagentClient, createTaskTool, type SubagentClient, type TaskProgress, type TaskToolOptions } from '@subagentd/client';

export interface OrchestrateOptions {
  model: LanguageModel;
  client: SubagentClient;
  parentTaskId: string;
  userId: string;
  prompt: string;
  /** Called with each preliminary result of a running task (for a UI). */
  onProgress?: (progress: TaskProgress) => void;
  abortSignal?: AbortSignal;
  /** The subagents' permission rules, who answers their approval requests, and tools they may call here. */
  permissions?: TaskToolOptions['permissions'];
  onApproval?: TaskToolOptions['onApproval'];
  clientTools?: Record<string, Tool>;
}

export async function orchestrate({ model, client, parentTaskId, userId, prompt, onProgress, abortSignal, ...callers }: OrchestrateOptions) {
  const task = await createTaskTool({ client, context: { parentTaskId, userId }, ...callers });
  const result = streamText({
    model,
    system: 'You are an orchestrator. Delegate work with the task tool; answer with what the subagents delivered.',
    prompt,
    tools: { task },
    stopWhen: stepCountIs(8),
    abortSignal,
  });
  for await (const part of result.fullStream) {
    if (part.type === 'tool-result' && part.preliminary) onProgress?.(part.output as TaskProgress);
    if (part.type === 'error') throw part.error;
  }
  return { text: await result.text, steps: (await result.steps).length };
}

// Run directly: a parent task against a real model and a running subagentd.
if (import.meta.url === `file://${process.argv[1]}`) {
  const client = createSubagentClient({ baseUrl: process.env.SUBAGENTD_URL ?? 'http://127.0.0.1:8787', apiKey: process.env.SUBAGENTD_API_KEY });
  const openai = createOpenAI({ apiKey: process.env.OPENAI_API_KEY, baseURL: process.env.OPENAI_BASE_URL });
  const { text } = await orchestrate({
    model: openai.chat(process.env.DEFAULT_MODEL ?? 'gpt-4.1-mini'),
    client,
    parentTaskId: `T-${Date.now()}`,
    userId: 'u-example',
    prompt: process.argv[2] ?? 'Use a subagent to list the files of the workspace, then tell me what it found.',
    onProgress: (p) => console.error(`  ${p.taskId} ${p.event}${p.toolName ? ` ${p.toolName}` : ''}`),
    // Each command a subagent wants to run waits for the terminal's user.
    permissions: { bash: 'ask' },
    onApproval: async ({ toolName, input }) => {
      const terminal = createInterface({ input: process.stdin, output: process.stderr });
      const yes = (await terminal.question(`Allow ${toolName} ${JSON.stringify(input)}? [y/N] `)).trim().toLowerCase() === 'y';
      terminal.close();
      return yes ? 'allow' : { decision: 'deny', message: 'the user said no' };
    },
    // A tool of the orchestrator the subagents may call: it runs here, not in subagentd.
    clientTools: {
      parent_notes: tool({
        description: "Read the orchestrator's notes on a topic",
        inputSchema: z.object({ topic: z.string() }),
        execute: async ({ topic }) => ({ topic, notes: `Nothing is known yet about ${topic}.` }),
      }),
    },
  });
  console.log(text);
}
