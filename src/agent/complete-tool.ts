import { Ajv, type ValidateFunction } from 'ajv';
import { z } from 'zod';
import { checkArtifacts } from '../tools/artifacts';
import { defineTool, type WorkspaceTool } from '../tools/tool-types';

const ajv = new Ajv({ allErrors: true, strict: false });

/**
 * Compiles a JSON Schema given as `options.outputSchema`; returns the error text when it is not a
 * valid schema, so the request can be refused with 400 before anything runs.
 */
export function compileOutputSchema(schema: unknown): { validate: ValidateFunction } | { error: string } {
  try {
    return { validate: ajv.compile(schema as object) };
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
 * The stop tool. It checks every handed-over path and, with an output schema, validates `output`;
 * an invalid output is thrown back so the model reads why and calls `complete` again.
 */
export function createCompleteTool(outputSchema: Record<string, unknown> | undefined): WorkspaceTool {
  const compiled = outputSchema ? compileOutputSchema(outputSchema) : undefined;
  const validate = compiled && 'validate' in compiled ? compiled.validate : undefined;
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
          throw new Error(`\`output\` does not match the output schema: ${ajv.errorsText(validate.errors)}`);
        }
      }
      const checked = await checkArtifacts(ctx.workspace, paths);
      return { summary, ...checked, output: validate ? output : (output ?? null) };
    },
  });
}
