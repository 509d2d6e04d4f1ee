import { Output, streamText, type LanguageModel } from 'ai';
import { z } from 'zod';
import type { Criterion } from '../shapes/outcome.ts';

/** What the grader answers: per criterion, and what the worker should fix. */
export const verdictSchema = z.object({
  satisfied: z.boolean(),
  criteria: z.array(z.object({ name: z.string(), passed: z.boolean(), note: z.string() })),
  feedback: z.string(),
});
export type Verdict = z.infer<typeof verdictSchema>;

/** The work a grader sees: what the worker handed over, never how it got there. */
export interface DeliveredWork {
  summary: string;
  output: unknown;
  /** Each artifact's text, already bounded by the caller. */
  files: Array<{ path: string; text: string }>;
}

const INSTRUCTIONS =
  'You grade the work a software agent delivered against a rubric. You see the rubric, the summary the agent ' +
  'wrote, its structured output and the text of the files it handed over; nothing else. Judge each criterion of ' +
  'the rubric on that evidence alone: a claim the files do not bear out fails. Answer with JSON: `satisfied` ' +
  '(true only if every criterion passed), `criteria` (one entry per criterion: a short `name`, `passed`, and a ' +
  '`note` saying why), and `feedback`: what the agent must change to satisfy the rubric (empty when satisfied).';

/** The grader's one user message: the rubric, then the delivered work. */
export function gradingPrompt(rubric: string, work: DeliveredWork): string {
  const files = work.files.map((f) => `--- ${f.path}\n${f.text}`).join('\n\n');
  return [
    `# Rubric\n${rubric}`,
    `# Summary\n${work.summary}`,
    `# Output\n${work.output === null || work.output === undefined ? '(none)' : JSON.stringify(work.output, null, 2)}`,
    `# Files\n${files || '(none)'}`,
  ].join('\n\n');
}

/**
 * Grades `work` against `rubric` with the grader model in a fresh context (its own system prompt and
 * one user message), asking for structured output. The model is expected to be wrapped by
 * `guardModel`, which bills the call to the task. A failed call or an answer that does not parse is
 * a verdict that did not pass, saying why.
 */
export async function gradeOutcome(opts: {
  model: LanguageModel;
  rubric: string;
  work: DeliveredWork;
  signal: AbortSignal;
  maxRetries: number;
}): Promise<Verdict> {
  let error: unknown = null;
  try {
    const result = streamText({
      model: opts.model,
      system: INSTRUCTIONS,
      messages: [{ role: 'user', content: gradingPrompt(opts.rubric, opts.work) }],
      output: Output.object({ schema: verdictSchema }),
      maxRetries: opts.maxRetries,
      abortSignal: opts.signal,
      onError: ({ error: e }) => {
        error ??= e;
      },
    });
    // The stream is read to its end (the guard bills a call once it ends), then its object.
    for await (const part of result.fullStream) if (part.type === 'error') error ??= part.error;
    if (!error) return normalise(await result.output);
  } catch (err) {
    error ??= err;
  }
  const why = error instanceof Error ? error.message : String(error);
  return { satisfied: false, criteria: [graderFailed(why)], feedback: `The work could not be graded (${why.slice(0, 300)}); complete again.` };
}

const graderFailed = (why: string): Criterion => ({ name: 'grader', passed: false, note: `the grader gave no verdict: ${why.slice(0, 500)}` });

/** `satisfied` only when every criterion passed (a grader that says otherwise is not taken at its word). */
function normalise(v: Verdict): Verdict {
  const satisfied = v.satisfied && v.criteria.every((c) => c.passed);
  return { satisfied, criteria: v.criteria.slice(0, 100), feedback: v.feedback };
}
