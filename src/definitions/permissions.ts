import { globMatches } from '../util/glob-matches.ts';
import type { PermissionDecision, Permissions } from '../shapes/permissions.ts';
import { compileGlob } from '../tools/glob-pattern.ts';
import type { SafeRegex } from '../tools/user-regex.ts';

/** A call's decision and the rule that gave it (null: no rule matched, the default `allow`). */
export interface CallDecision {
  decision: PermissionDecision;
  rule: string | null;
}

const STRICTNESS: Record<PermissionDecision, number> = { allow: 0, ask: 1, deny: 2 };
const stricter = (a: CallDecision, b: CallDecision) => (STRICTNESS[b.decision] > STRICTNESS[a.decision] ? b : a);

/** The file tools whose rules take a path glob (`write_file(plans/**)`), matched as the workspace tools' globs. */
export const PATH_RULE_TOOLS: ReadonlySet<string> = new Set(['read_file', 'write_file', 'edit_file']);

/** `bash(<glob>)`, `write_file(<glob>)`, ... → the tool and its glob; null for a plain tool name. */
function ruleOf(key: string): { tool: string; glob: string } | null {
  const open = key.indexOf('(');
  if (open <= 0 || !key.endsWith(')')) return null;
  return { tool: key.slice(0, open), glob: key.slice(open + 1, -1) };
}

/** Compiled path globs, by pattern (rules are few and reused at every call). */
const pathGlobs = new Map<string, SafeRegex | null>();

/**
 * A path glob of a file tool's rule (`*` within one folder, `**` across, as glob and list_files
 * take them): null when it does not compile (admission refuses those, `pathGlobProblem`).
 */
function pathGlob(glob: string): SafeRegex | null {
  let compiled = pathGlobs.get(glob);
  if (compiled === undefined) {
    try {
      compiled = compileGlob(glob);
    } catch {
      compiled = null;
    }
    if (pathGlobs.size >= 1000) pathGlobs.clear();
    pathGlobs.set(glob, compiled);
  }
  return compiled;
}

/** Why a rule's path glob cannot be used (`..`, a leading `/`, an unclosed brace), or null. */
export function pathGlobProblem(key: string): string | null {
  const rule = ruleOf(key);
  if (!rule || !PATH_RULE_TOOLS.has(rule.tool)) return null;
  try {
    compileGlob(rule.glob);
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

/** Does a rule's glob match one subject: a simple command (bash) or a workspace-relative path? */
const globHit = (tool: string, glob: string, subject: string) => (tool === 'bash' ? globMatches(glob, subject) : (pathGlob(glob)?.test(subject) ?? false));

/**
 * The most specific rule of one source matching a call: a `<tool>(<glob>)` rule over the plain tool
 * name, and among globs the one with the longest literal text (ties: the stricter). Null when none
 * matches. `subject`: one simple command of bash, or the path a file tool works on.
 */
function matchOf(rules: Permissions | undefined, toolName: string, subject: string | undefined): CallDecision | null {
  if (!rules) return null;
  let best: { found: CallDecision; weight: number } | null = null;
  for (const [key, decision] of Object.entries(rules)) {
    const rule = ruleOf(key);
    let weight: number;
    if (rule === null) {
      if (key !== toolName) continue;
      weight = -1;
    } else {
      if (rule.tool !== toolName || subject === undefined || !globHit(rule.tool, rule.glob, subject)) continue;
      weight = rule.glob.replaceAll('*', '').length;
    }
    const found = { decision, rule: key };
    if (!best || weight > best.weight || (weight === best.weight && stricter(best.found, found) === found)) best = { found, weight };
  }
  return best?.found ?? null;
}

/** The rule named when a bash line cannot be parsed (see shell-commands.ts): it is asked. */
export const UNPARSED_RULE = 'bash (a line that cannot be parsed)';

const hasGlobs = (rules: Permissions, toolName: string) => Object.keys(rules).some((key) => ruleOf(key)?.tool === toolName);

/**
 * What one source says of a call. With `<tool>(<glob>)` rules a call is decided per subject: bash
 * per simple command (`subjects`, from shell-commands.ts), a file tool by its path. Each subject
 * takes its most specific rule, and the strictest of them applies, so a line is allowed only when
 * every command in it is; null (a line that cannot be parsed) is asked, unless the source denies
 * the tool outright.
 */
function decideSource(rules: Permissions | undefined, toolName: string, subjects: string[] | null | undefined): CallDecision | null {
  if (!rules) return null;
  if (subjects === undefined || !hasGlobs(rules, toolName)) return matchOf(rules, toolName, undefined);
  const plain = matchOf(rules, toolName, undefined);
  if (subjects === null) return plain?.decision === 'deny' ? plain : { decision: 'ask', rule: UNPARSED_RULE };
  if (subjects.length === 0) return plain;
  let worst: CallDecision = { decision: 'allow', rule: null };
  for (const subject of subjects) {
    const found = matchOf(rules, toolName, subject) ?? { decision: 'allow', rule: null };
    if (STRICTNESS[found.decision] > STRICTNESS[worst.decision] || (worst.rule === null && found.rule !== null && found.decision === worst.decision))
      worst = found;
  }
  return worst.rule === null ? null : worst;
}

/**
 * What the sources (the definition's rules, the task's, then every ancestor's: nesting) say of one
 * call: each its own answer (default `allow`), and the strictest applies, so a task only narrows
 * its definition and a child its parent. For bash, `commands` are the line's simple commands
 * (null: it could not be parsed); left out, only plain `bash` rules apply.
 */
export function decideCall(sources: Array<Permissions | undefined>, toolName: string, subjects?: string[] | null): CallDecision {
  let out: CallDecision = { decision: 'allow', rule: null };
  for (const rules of sources) {
    const found = decideSource(rules, toolName, subjects);
    // As strict or stricter: the answer names the rule that gave it.
    if (found && STRICTNESS[found.decision] >= STRICTNESS[out.decision]) out = found;
  }
  return out;
}

/** Does any source hold a `<tool>(<glob>)` rule (for bash: then lines must be parsed to be decided)? */
export const needsSubjects = (sources: Array<Permissions | undefined>, toolName: string) =>
  sources.some((rules) => rules !== undefined && hasGlobs(rules, toolName));

/**
 * Is the tool denied whole by one of the sources (then it is not offered to the model at all)? Its
 * plain rule is `deny` and no narrower `bash(<glob>)` rule of that source lets a call through.
 */
export function deniedWhole(sources: Array<Permissions | undefined>, toolName: string): boolean {
  return sources.some((rules) => {
    if (!rules || rules[toolName] !== 'deny') return false;
    return !Object.entries(rules).some(([key, decision]) => ruleOf(key)?.tool === toolName && decision !== 'deny');
  });
}
