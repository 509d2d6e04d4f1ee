/** A task's outcome: its checks of `complete` (a verify command, a rubric graded in a fresh context) and their record. */
import type { LanguageModel } from 'ai';
import type { AgentDefinition } from '../../definitions/agent-definition.ts';
import { gradeOutcome, type DeliveredWork } from '../../loop/grade-outcome.ts';
import { DEFAULT_MAX_ITERATIONS, type CreateTaskBody, type Criterion, type OutcomeResult, type OutcomeSpec } from '../../shapes/task.ts';
import type { TaskRow } from '../../store/schema.ts';
import { bashTool } from '../../tools/bash.ts';
import type { CompleteResult } from '../../tools/complete.ts';
import type { ToolContext } from '../../tools/tool-types.ts';
import { openInside, readHead } from '../../workspace/safe-open.ts';
import type { RunContext } from './run-context.ts';

/** What of the artifacts the grader reads: the first files, each and all of them bounded. */
const MAX_FILES = 20;
const MAX_FILE_BYTES = 16 * 1024;
const MAX_FILES_BYTES = 64 * 1024;
/** What of a verify command's output is its evidence (the tail: where test runners say what failed). */
const EVIDENCE_CHARS = 2000;

/**
 * The outcome a task is checked against: its definition's, which always applies (a task started
 * by another one included), with the task's own added: its rubric after the definition's, its
 * verify command where the definition has none, the lower `maxIterations`. Null without either.
 */
export function outcomeOf(def: Pick<AgentDefinition, 'outcome'>, body: Pick<CreateTaskBody, 'options'>): OutcomeSpec | null {
  const a = def.outcome;
  const b = body.options?.outcome;
  if (!a || !b) return a ?? b ?? null;
  const rubric = [a.rubric, b.rubric].filter((r) => r !== undefined).join('\n\n') || undefined;
  const maxIterations = Math.min(a.maxIterations ?? DEFAULT_MAX_ITERATIONS, b.maxIterations ?? DEFAULT_MAX_ITERATIONS);
  const verify = a.verify ?? b.verify;
  const graderModel = a.graderModel ?? b.graderModel;
  return { ...(rubric && { rubric }), ...(verify && { verify }), maxIterations, ...(graderModel && { graderModel }) };
}

export interface OutcomeCheckOptions {
  row: TaskRow;
  spec: OutcomeSpec;
  /** The grader model, guarded (its calls billed to the task at its own price). */
  grader: LanguageModel;
  toolContext: ToolContext;
}

/**
 * The check of each `complete` of a run: the verify command in the task's sandbox, then (when it
 * passed, or there is none) the rubric graded by the grader model, which sees the rubric and the
 * delivered work only. Each check is stored on the task with an `outcome.evaluated` event before
 * the model reads its answer. Not satisfied with iterations left, it answers the refusal the model
 * reads; satisfied, or at the last iteration, null (the task ends).
 */
export function createOutcomeCheck(ctx: RunContext, opts: OutcomeCheckOptions) {
  const { row, spec, toolContext } = opts;
  const max = spec.maxIterations ?? DEFAULT_MAX_ITERATIONS;
  // Counted across the task's runs (a resume after a pause or a crash goes on from the stored count).
  let iterations = row.outcome?.iterations ?? 0;
  let checked = row.outcome !== null;

  const store = (outcome: OutcomeResult, event: { iteration: number; satisfied: boolean; by: 'verify' | 'grader' } | null) =>
    ctx.writes.owned(row, async (s, append) => {
      await s.setOutcome(row.id, outcome);
      if (event) append(row, 'outcome.evaluated', { ...event, criteria: outcome.criteria });
    });

  return {
    check: async (done: CompleteResult): Promise<string | null> => {
      const iteration = ++iterations;
      checked = true;
      const criteria: Criterion[] = [];
      let feedback = '';
      let by: 'verify' | 'grader' = 'verify';
      if (spec.verify) {
        const ran = await verify(spec.verify, toolContext);
        criteria.push(ran.criterion);
        if (!ran.criterion.passed) feedback = `The verify command \`${spec.verify.command.slice(0, 200)}\` failed: ${ran.criterion.note}`;
      }
      if (spec.rubric && criteria.every((c) => c.passed)) {
        by = 'grader';
        const verdict = await gradeOutcome({
          model: opts.grader,
          rubric: spec.rubric,
          work: await deliveredWork(done, toolContext),
          signal: toolContext.signal,
          maxRetries: ctx.deps.limits.modelMaxRetries,
        });
        criteria.push(...verdict.criteria);
        if (!verdict.satisfied) feedback = verdict.feedback || 'The grader found the rubric not satisfied.';
      }
      const satisfied = criteria.every((c) => c.passed);
      const status = satisfied ? 'satisfied' : iteration >= max ? 'max_iterations_reached' : 'failed';
      await store({ status, iterations: iteration, criteria, feedback: satisfied ? null : feedback }, { iteration, satisfied, by });
      if (status !== 'failed') return null;
      const failing = criteria.filter((c) => !c.passed).map((c) => `- ${c.name}: ${c.note}`);
      return (
        `complete was refused: the task's outcome is not satisfied (check ${iteration} of ${max}). Fix the work, then call complete again.\n` +
        `${feedback}\n${failing.join('\n')}`
      );
    },

    /** The run ended: a task whose `complete` was never checked ends with its outcome `failed`, 0 iterations. */
    ended: async (): Promise<void> => {
      if (!checked) await store({ status: 'failed', iterations: 0, criteria: [], feedback: null }, null);
    },
  };
}

/** Runs the verify command as the bash tool runs a command: the task's sandbox, network policy and limits. */
async function verify(v: NonNullable<OutcomeSpec['verify']>, toolContext: ToolContext): Promise<{ criterion: Criterion }> {
  try {
    const r = (await bashTool.execute({ command: v.command, timeoutMs: v.timeoutMs }, toolContext)) as {
      exitCode: number | null;
      stdout: string;
      stderr: string;
      timedOut?: boolean;
    };
    const output = `${r.stdout}${r.stderr ? `\n${r.stderr}` : ''}`.trim();
    const tail = output.length > EVIDENCE_CHARS ? `…${output.slice(-EVIDENCE_CHARS)}` : output;
    const passed = r.exitCode === 0 && !r.timedOut;
    return {
      criterion: { name: 'verify', passed, note: `exit code ${r.exitCode ?? 'none'}${r.timedOut ? ' (timed out)' : ''}${tail ? `; output:\n${tail}` : ''}` },
    };
  } catch (err) {
    return { criterion: { name: 'verify', passed: false, note: `the command could not run: ${(err as Error).message}` } };
  }
}

/** What the grader sees of the work: the summary, the output, the artifacts' text (bounded; opened once, inside the workspace). */
async function deliveredWork(done: CompleteResult, toolContext: ToolContext): Promise<DeliveredWork> {
  const { workspace } = toolContext;
  const files: DeliveredWork['files'] = [];
  let left = MAX_FILES_BYTES;
  for (const a of done.artifacts.filter((x) => x.fsType === 'file').slice(0, MAX_FILES)) {
    if (left <= 0) {
      files.push({ path: a.relativePath, text: '(not shown: the files before it filled what the grader reads)' });
      continue;
    }
    try {
      const target = await workspace.resolve(a.path, { mustExist: true });
      const opened = await openInside(workspace.root, target.real, a.relativePath, 'read', workspace.calls);
      try {
        const bytes = await readHead(opened, Math.min(MAX_FILE_BYTES, left));
        left -= bytes.length;
        const text = bytes.subarray(0, 8192).includes(0) ? `(binary, ${opened.stat.size} bytes)` : bytes.toString('utf8');
        files.push({ path: a.relativePath, text: bytes.length < opened.stat.size ? `${text}\n[… cut: ${opened.stat.size} bytes in all]` : text });
      } finally {
        await opened.handle.close();
      }
    } catch (err) {
      files.push({ path: a.relativePath, text: `(could not be read: ${(err as Error).message})` });
    }
  }
  return { summary: done.summary, output: done.output, files };
}
