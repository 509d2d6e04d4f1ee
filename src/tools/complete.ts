import { Ajv, type ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { z } from 'zod';
import { checkArtifacts } from '../workspace/artifacts.ts';
import { defineTool, type WorkspaceTool } from './tool-types.ts';
import { compileSafeRegex } from './user-regex.ts';

/** Largest `options.outputSchema`, as JSON. */
export const MAX_OUTPUT_SCHEMA_BYTES = 64 * 1024;
/** Deepest nesting of objects and arrays in an output schema. */
const MAX_OUTPUT_SCHEMA_DEPTH = 32;

// `pattern` and `patternProperties` run through RE2: a schema's regex cannot block the event loop.
const re2Engine = Object.assign((pattern: string) => compileSafeRegex(pattern), { code: 're2' });

function depthOf(value: unknown, limit: number, depth = 0): number {
  if (depth > limit || value === null || typeof value !== 'object') return depth;
  let max = depth;
  for (const v of Object.values(value)) max = Math.max(max, depthOf(v, limit, depth + 1));
  return max;
}

/**
 * Compiles a JSON Schema given as `options.outputSchema` in an Ajv instance of its own, so a
 * task's schema (its `$id`, its `$ref`s) never meets another task's, and the compiled code is
 * released with the task. Bounded in size and depth; regexes run through RE2. Returns the error
 * text when it is not acceptable, so the request can be refused with 400 before anything runs.
 */
export function compileOutputSchema(schema: unknown): { validate: ValidateFunction; errorsText(): string } | { error: string } {
  const size = Buffer.byteLength(JSON.stringify(schema) ?? '');
  if (size > MAX_OUTPUT_SCHEMA_BYTES) return { error: `the schema has ${size} bytes as JSON, over the limit of ${MAX_OUTPUT_SCHEMA_BYTES}` };
  if (depthOf(schema, MAX_OUTPUT_SCHEMA_DEPTH) > MAX_OUTPUT_SCHEMA_DEPTH) {
    return { error: `the schema is nested deeper than ${MAX_OUTPUT_SCHEMA_DEPTH} levels` };
  }
  try {
    // No remote $ref loading (no loadSchema), no format warnings on stdout. The draft the schema
    // names (zod's toJSONSchema and most generators write 2020-12), else draft-07.
    const named = (schema as { $schema?: unknown })?.$schema;
    const draft = typeof named === 'string' ? named : '';
    const Draft = draft.includes('2020-12') ? Ajv2020 : draft.includes('2019-09') ? Ajv2019 : Ajv;
    const ajv = new Draft({ allErrors: true, strict: false, logger: false, code: { regExp: re2Engine } });
    const validate = ajv.compile(schema as object);
    return { validate, errorsText: () => ajv.errorsText(validate.errors) };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

const completeInputSchema = z.object({
  summary: z.string().min(1).describe('What you delivered, in a few sentences'),
  paths: z.array(z.string()).describe('Workspace paths of the files you produced (may be empty)'),
  output: z.unknown().optional().describe('Structured result, required when an output schema was given'),
});

export interface CompleteResult {
  summary: string;
  artifacts: Awaited<ReturnType<typeof checkArtifacts>>['artifacts'];
  skipped: Awaited<ReturnType<typeof checkArtifacts>>['skipped'];
  output: unknown;
}

/**
 * What the model reads back from `complete`: files named relative to the workspace root only, never
 * by a path of the service's host.
 */
export function completeForModel(r: CompleteResult) {
  return {
    summary: r.summary,
    artifacts: r.artifacts.map((a) => ({ relativePath: a.relativePath, size: a.size, fsType: a.fsType, modifiedAt: a.modifiedAt })),
    skipped: r.skipped.map((s) => ({ path: s.path, reason: s.reason })),
    output: r.output,
  };
}

/**
 * The stop tool. It checks every handed-over path and, with an output schema, validates `output`;
 * an invalid output is thrown back so the model reads why and calls `complete` again.
 */
export function createCompleteTool(outputSchema: Record<string, unknown> | undefined): WorkspaceTool {
  const compiled = outputSchema ? compileOutputSchema(outputSchema) : undefined;
  const schema = compiled && 'validate' in compiled ? compiled : undefined;
  const validate = schema?.validate;
  return defineTool({
    name: 'complete',
    readOnly: true,
    description:
      'Finish the task and hand over the deliverables. Call it exactly once, at the end, with a short summary of ' +
      'what you did and the workspace paths of the files you produced' +
      (outputSchema ? ', and `output`: a value that matches this JSON Schema: ' + JSON.stringify(outputSchema) : '') +
      '.',
    inputSchema: completeInputSchema,
    async execute({ summary, paths, output }, ctx): Promise<CompleteResult> {
      if (validate) {
        if (output === undefined) throw new Error('`output` is required: it must match the output schema');
        if (!validate(output)) {
          throw new Error(`\`output\` does not match the output schema: ${schema.errorsText()}`);
        }
      }
      const checked = await checkArtifacts(ctx.workspace, paths);
      return { summary, ...checked, output: validate ? output : (output ?? null) };
    },
  });
}
