import { z } from 'zod';

/** What a permission rule says of a call: run it, ask the caller first, or refuse it. */
export const permissionDecisionSchema = z.enum(['allow', 'ask', 'deny']);
export type PermissionDecision = z.infer<typeof permissionDecisionSchema>;

/**
 * `<tool>`, `bash(<glob>)` (a glob over each simple command, `*` matching anything) or
 * `read_file(<glob>)` / `write_file(<glob>)` / `edit_file(<glob>)` (a path glob: `*` within one
 * folder, `**` across).
 */
const RULE_KEY = /^(?:[a-z][a-z0-9_]{0,63}|mcp__[A-Za-z0-9_-]{1,120}|(?:bash|read_file|write_file|edit_file)\([^()]{1,500}\))$/;

/**
 * Permission rules: a tool name, or `<tool>(<glob>)`, mapped to allow | ask | deny (a definition's
 * front matter `permissions`, a task's `options.permissions`). At most 100 rules.
 */
export const permissionsSchema = z
  .record(z.string().regex(RULE_KEY, 'must be a tool name, bash(<glob>), or read_file, write_file or edit_file(<path glob>)'), permissionDecisionSchema)
  .refine((rules) => Object.keys(rules).length <= 100, 'at most 100 rules');
export type Permissions = z.infer<typeof permissionsSchema>;
