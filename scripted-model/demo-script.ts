import { isSubagent, orchestratorTurn, userPrompt } from './parent-script.ts';
import type { ScriptedModel, ScriptedTurn, TurnContext } from './server.ts';

/**
 * The scripts of `npm run demo` and `npm run model`: a subagent that greps logs/ for errors,
 * writes reports/errors.md with a count by kind, checks it with bash and completes (prompts that
 * mention `error logs`, `errors in logs` or `logs/app.log`), and, for any other prompt, one that
 * says it has no script and completes, so a walk-through never stops at a 400 of the model. A
 * conversation that is not a subagent's is an orchestrator's: it delegates through `task`
 * (parent-script.ts).
 */
const summariseErrorLogs = (ctx: TurnContext): ScriptedTurn => {
  switch (ctx.turn) {
    case 0:
      return {
        text: 'I will find the errors in the logs first.',
        chunkDelayMs: 15,
        toolCalls: [{ name: 'grep', args: { pattern: 'ERROR', path: 'logs' } }],
        usage: { input: 812, output: 38 },
      };
    case 1: {
      const lines = (ctx.toolResults[0]?.content ?? '').split('\n').filter((l) => l.includes('ERROR'));
      const byKind = new Map<string, number>();
      for (const l of lines) {
        const kind = l.split('ERROR ')[1]?.split(':')[0] ?? 'unknown';
        byKind.set(kind, (byKind.get(kind) ?? 0) + 1);
      }
      const table = [...byKind]
        .sort((a, b) => b[1] - a[1])
        .map(([k, n]) => `| ${k} | ${n} |`)
        .join('\n');
      return {
        text: `Found ${lines.length} errors; writing the report.`,
        chunkDelayMs: 15,
        toolCalls: [
          {
            name: 'write_file',
            args: {
              path: 'reports/errors.md',
              content: `# Error summary\n\n${lines.length} errors in logs/app.log.\n\n| kind | count |\n|---|---|\n${table}\n`,
            },
          },
        ],
        usage: { input: 1290, output: 164, cached: 768 },
      };
    }
    case 2:
      return {
        delayMs: 400,
        toolCalls: [{ name: 'bash', args: { command: 'wc -l reports/errors.md && head -3 reports/errors.md' } }],
        usage: { input: 1530, output: 41, cached: 1024, reasoning: 12 },
      };
    default:
      return {
        toolCalls: [
          {
            name: 'complete',
            args: {
              summary: 'Summarised the errors of logs/app.log by kind in reports/errors.md.',
              paths: ['reports/errors.md'],
            },
          },
        ],
        usage: { input: 1702, output: 52, cached: 1280 },
      };
  }
};

const noScript = (ctx: TurnContext): ScriptedTurn =>
  ctx.turn === 0
    ? {
        text: 'This is the scripted model: it has no script for this prompt, so it completes at once.',
        usage: { input: 120, output: 24 },
        toolCalls: [
          { name: 'complete', args: { summary: 'The scripted model has no script for this prompt (see scripted-model/demo-script.ts).', paths: [] } },
        ],
      }
    : { toolCalls: [{ name: 'complete', args: { summary: 'done', paths: [] } }], usage: { input: 10, output: 2 } };

const aboutErrorLogs = (prompt: string) => /error logs|errors? in logs|logs\/app\.log/i.test(prompt);

export function scriptDemo(model: ScriptedModel): void {
  // One script for every prompt: the orchestrator's prompt names the same logs as its subagent's.
  model.script('', (ctx) => {
    if (!isSubagent(ctx)) return orchestratorTurn(ctx);
    return aboutErrorLogs(userPrompt(ctx)) ? summariseErrorLogs(ctx) : noScript(ctx);
  });
}
