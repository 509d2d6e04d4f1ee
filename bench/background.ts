/** `npm run bench background`: a lead with three children in the background against three it waits for, on the same script. */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ScriptedModel, ScriptedTurn, TurnContext } from '../scripted-model/server.ts';
import { now, pct, startBenchService, warmUp } from './support.ts';

/** Every model answer of the lead and of its children comes after this long (a model's time to answer). */
const ANSWER_MS = 300;
const CHILDREN = ['A', 'B', 'C'];

/**
 * How the lead starts its three children: one `task` call per step or three in one step, each
 * waiting for its child or in the background (then `wait` collects them).
 */
export const VARIANTS = [
  { name: 'waiting, one call per step', background: false, oneStep: false },
  { name: 'waiting, three calls in one step', background: false, oneStep: true },
  { name: 'background, one call per step', background: true, oneStep: false },
  { name: 'background, three calls in one step', background: true, oneStep: true },
] as const;
type Variant = (typeof VARIANTS)[number];

/**
 * The same script for every variant: the lead starts three children (two steps each), then does
 * two steps of its own work, then completes (in the background it `wait`s for the children
 * first). Only `run_in_background` and the `wait` calls differ. Rounds alternate the variants.
 */
function leadScript(v: Variant, marker: string) {
  const spawn = (x: string) => ({
    name: 'task',
    args: { subagent_type: 'general', description: `Part ${x}`, prompt: `BGB-CHILD-${marker}-${x}`, run_in_background: v.background },
  });
  const steps: ScriptedTurn[] = [
    ...(v.oneStep ? [{ toolCalls: CHILDREN.map(spawn) }] : CHILDREN.map((x) => ({ toolCalls: [spawn(x)] }))),
    { toolCalls: [{ name: 'list_files', args: {} }] },
    { toolCalls: [{ name: 'list_files', args: {} }] },
  ];
  return (ctx: TurnContext): ScriptedTurn => {
    if (ctx.turn < steps.length) return { ...steps[ctx.turn], delayMs: ANSWER_MS };
    const waits = ctx.messages.filter((m) => m.role === 'tool' && String(m.content).includes('"finished"'));
    const done = waits.reduce((n, m) => n + (JSON.parse(String(m.content)).finished as unknown[]).length, 0);
    if (v.background && done < CHILDREN.length) return { toolCalls: [{ name: 'wait', args: {} }], delayMs: ANSWER_MS };
    return { toolCalls: [{ name: 'complete', args: { summary: 'three parts done', paths: [] } }], delayMs: ANSWER_MS };
  };
}

function scriptRound(model: ScriptedModel, v: Variant, marker: string) {
  model.script(`BGB-LEAD-${marker}`, leadScript(v, marker));
  for (const x of CHILDREN) {
    model.script(`BGB-CHILD-${marker}-${x}`, [
      { toolCalls: [{ name: 'list_files', args: {} }], delayMs: ANSWER_MS },
      { toolCalls: [{ name: 'complete', args: { summary: `part ${x}`, paths: [] } }], delayMs: ANSWER_MS },
    ]);
  }
}

/** Wall time of each variant's lead, submit to end (`?wait=true`), over `rounds` alternating rounds. */
export async function benchBackground(rounds = 5) {
  const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-bench-background-'));
  mkdirSync(path.join(dir, 'agents'));
  writeFileSync(path.join(dir, 'agents', 'lead.md'), '---\nname: lead\ndescription: Starts three parts\nmaxDepth: 1\n---\nDelegate.\n');
  const svc = await startBenchService({}, { dir });
  try {
    await warmUp(svc.url);
    const times = new Map<string, number[]>(VARIANTS.map((v) => [v.name, []]));
    for (let r = 0; r < rounds; r++) {
      for (const [i, v] of VARIANTS.entries()) {
        const marker = `${r}-${i}`;
        scriptRound(svc.model, v, marker);
        const t = now();
        const res = await fetch(`${svc.url}/tasks?wait=true`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            subagent_type: 'lead',
            description: 'bench lead',
            prompt: `BGB-LEAD-${marker}`,
            context: { parentTaskId: `P-bg-${marker}`, userId: 'u-bench' },
          }),
        });
        const task = JSON.parse((await res.text()).trim()) as { status: string; summary: string };
        if (task.status !== 'completed') throw new Error(`${v.name}: the lead ended ${task.status}: ${JSON.stringify(task).slice(0, 300)}`);
        times.get(v.name)!.push(now() - t);
      }
    }
    return {
      rounds,
      answerMs: ANSWER_MS,
      rows: VARIANTS.map((v) => {
        const xs = times.get(v.name)!;
        return { name: v.name, p50: pct(xs, 50), min: Math.min(...xs), max: Math.max(...xs) };
      }),
    };
  } finally {
    await svc.close();
  }
}
