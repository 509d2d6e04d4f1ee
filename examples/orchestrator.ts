/**
 * An orchestrator on the ai SDK with subagentd's `task` tool: the parent model delegates, the
 * subagents run in subagentd, the parent keeps only each task's summary, output and file pointers.
 *
 *   SUBAGENTD_URL=http://127.0.0.1:8787 OPENAI_API_KEY=sk-... npx tsx examples/orchestrator.ts "Summarise the errors in logs/"
 *
 * (`npm start` runs the service; with API_KEYS set, give SUBAGENTD_API_KEY too.) The test in
 * test/orchestrator.test.ts runs `orchestrate` below against the scripted model.
 */
import { createOpenAI } from '@ai-sdk/openai';
import { stepCountIs, streamText, type LanguageModel } from 'ai';
import { createSubagentClient, createTaskTool, type SubagentClient, type TaskProgress } from '@subagentd/client';

export interface OrchestrateOptions {
  model: LanguageModel;
  client: SubagentClient;
  parentTaskId: string;
  userId: string;
  prompt: string;
  /** Called with each preliminary result of a running task (for a UI). */
  onProgress?: (progress: TaskProgress) => void;
  abortSignal?: AbortSignal;
}

export async function orchestrate({ model, client, parentTaskId, userId, prompt, onProgress, abortSignal }: OrchestrateOptions) {
  const task = await createTaskTool({ client, context: { parentTaskId, userId } });
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
  });
  console.log(text);
}
