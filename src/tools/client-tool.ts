/** Caller-run tools (`options.clientTools`): offered to the model like the service's own, run by the caller. */
import { z } from 'zod';
import type { ClientTool } from '../shapes/task.ts';
import type { WorkspaceTool } from './tool-types.ts';
import { compileOutputSchema } from './complete.ts';

/**
 * A caller-run tool as the loop offers it: its JSON Schema is sent to the provider as given and
 * checks the model's input (Ajv, bounded as an output schema is); a call that passes waits for the
 * caller's result instead of running here. Throws when the schema does not compile (admission
 * refuses such a task first: `checkClientTools`).
 */
export function clientTool(spec: ClientTool): WorkspaceTool {
  const compiled = compileOutputSchema(spec.inputSchema);
  if ('error' in compiled) throw new Error(`the input schema of client tool "${spec.name}" does not compile: ${compiled.error}`);
  const inputSchema = z.unknown().superRefine((value, ctx) => {
    if (!compiled.validate(value)) ctx.addIssue({ code: 'custom', message: compiled.errorsText() });
  });
  return {
    name: spec.name,
    description: spec.description,
    inputSchema,
    jsonSchema: spec.inputSchema,
    caller: true,
    readOnly: false,
    execute: () => Promise.reject(new Error(`"${spec.name}" is run by the caller`)),
  };
}

/**
 * What is wrong with a task's caller-run tools: a name taken by a tool of the service (`taken`) or
 * given twice, a schema that does not compile or does not describe an object. One entry per problem.
 */
export function checkClientTools(tools: ClientTool[], taken: ReadonlySet<string>): Array<{ field: string; message: string }> {
  const invalid: Array<{ field: string; message: string }> = [];
  const seen = new Set<string>();
  tools.forEach((t, i) => {
    const field = `body.options.clientTools.${i}`;
    if (taken.has(t.name)) invalid.push({ field: `${field}.name`, message: `"${t.name}" is the name of a tool of the service` });
    else if (seen.has(t.name)) invalid.push({ field: `${field}.name`, message: `"${t.name}" is given twice` });
    seen.add(t.name);
    const type = t.inputSchema.type;
    if (type !== undefined && type !== 'object') invalid.push({ field: `${field}.inputSchema`, message: 'must describe an object (type: "object")' });
    const compiled = compileOutputSchema(t.inputSchema);
    if ('error' in compiled) invalid.push({ field: `${field}.inputSchema`, message: `not a valid JSON Schema: ${compiled.error}` });
  });
  return invalid;
}
