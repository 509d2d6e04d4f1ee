/**
 * A definition's hooks (seed 001 `hooks`, in Claude Code's shape): commands or URLs told of a
 * tool call before it runs (`PreToolUse`), after it ran (`PostToolUse`), and when the subagent
 * calls `complete` (`Stop`).
 */
import { z } from 'zod';
import { globMatches } from '../util/glob-matches.ts';

export const HOOK_EVENTS = ['PreToolUse', 'PostToolUse', 'Stop'] as const;
export type HookEvent = (typeof HOOK_EVENTS)[number];

/** Most hooks of one event of a definition (each runs at every matching call). */
export const MAX_HOOKS_PER_EVENT = 10;
/** A hook's time when it names none (the contract's default). */
export const DEFAULT_HOOK_TIMEOUT_MS = 30_000;
/** The bounds of a hook's `timeoutMs`: a hook holds its call at most this long. */
export const MIN_HOOK_TIMEOUT_MS = 100;
export const MAX_HOOK_TIMEOUT_MS = 600_000;

/** A tool name, a glob over names (`mcp__github__*`, `*`), or several separated by `|` (`write_file|edit_file`). */
const MATCHER = /^[A-Za-z0-9_.*|-]{1,256}$/;

export const hookSpecSchema = z
  .strictObject({
    matcher: z
      .string()
      .regex(MATCHER, 'a tool name or glob (letters, digits, "_", "-", ".", "*"), several separated by "|"')
      .optional()
      .describe('the tools it is told of (absent: all); a Stop hook is told of every `complete`'),
    command: z.string().min(1).max(10_000).optional().describe('run with bash in the task’s sandbox, the event’s JSON on its standard input'),
    url: z
      .url({ protocol: /^https?$/ })
      .max(2048)
      .optional()
      .describe('POSTed the event’s JSON, signed as webhooks are (HOOK_SECRET)'),
    timeoutMs: z.number().int().min(MIN_HOOK_TIMEOUT_MS).max(MAX_HOOK_TIMEOUT_MS).optional(),
  })
  .refine((h) => (h.command === undefined) !== (h.url === undefined), 'a hook has either `command` or `url`, one of them');
export type HookSpec = z.infer<typeof hookSpecSchema>;

const hookList = z.array(hookSpecSchema).max(MAX_HOOKS_PER_EVENT, `at most ${MAX_HOOKS_PER_EVENT} hooks per event`).optional();

/** `hooks: { PreToolUse: [...], PostToolUse: [...], Stop: [...] }` of a definition's front matter. */
export const hooksSchema = z.strictObject({ PreToolUse: hookList, PostToolUse: hookList, Stop: hookList });
export type Hooks = z.infer<typeof hooksSchema>;

/** Does a hook's matcher take this tool? `*` (or none) takes every tool; `|` separates alternatives. */
export function hookMatches(matcher: string | undefined, toolName: string): boolean {
  if (matcher === undefined || matcher === '') return true;
  return matcher.split('|').some((glob) => glob !== '' && globMatches(glob, toolName));
}

/** The hooks of `event` that take `toolName`, in the definition's order. */
export function hooksFor(hooks: Hooks | undefined, event: HookEvent, toolName: string): HookSpec[] {
  return (hooks?.[event] ?? []).filter((h) => hookMatches(h.matcher, toolName));
}

/** Does any hook of the definition POST to a URL (it needs HOOK_SECRET to sign)? */
export const hasUrlHooks = (hooks: Hooks | undefined) => HOOK_EVENTS.some((e) => (hooks?.[e] ?? []).some((h) => h.url !== undefined));
/** Does any hook run a command (it needs the sandbox)? */
export const hasCommandHooks = (hooks: Hooks | undefined) => HOOK_EVENTS.some((e) => (hooks?.[e] ?? []).some((h) => h.command !== undefined));
