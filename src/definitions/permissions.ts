import type { PermissionDecision, Permissions } from '../shapes/permissions.ts';

/** A call's decision and the rule that gave it (null: no rule matched, the default `allow`). */
export interface CallDecision {
  decision: PermissionDecision;
  rule: string | null;
}

const STRICTNESS: Record<PermissionDecision, number> = { allow: 0, ask: 1, deny: 2 };
const stricter = (a: CallDecision, b: CallDecision) => (STRICTNESS[b.decision] > STRICTNESS[a.decision] ? b : a);

/** `bash(<glob>)` → the glob; null for a plain tool name. */
const globOf = (key: string) => (key.startsWith('bash(') && key.endsWith(')') ? key.slice(5, -1) : null);

/**
 * `*` matches any run of characters (`/` and spaces included); everything else itself.
 * The greedy two-pointer match: time at most the product of the two lengths, no regex, no backtracking blow-up.
 */
export function globMatches(glob: string, text: string): boolean {
  let g = 0;
  let t = 0;
  let star = -1;
  let mark = 0;
  while (t < text.length) {
    if (g < glob.length && glob[g] !== '*' && glob[g] === text[t]) {
      g++;
      t++;
    } else if (g < glob.length && glob[g] === '*') {
      star = g++;
      mark = t;
    } else if (star !== -1) {
      g = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (g < glob.length && glob[g] === '*') g++;
  return g === glob.length;
}

/**
 * The most specific rule of one source matching a call: a `bash(<glob>)` rule over the plain tool
 * name, and among globs the one with the longest literal text (ties: the stricter). Null when none
 * matches.
 */
function matchOf(rules: Permissions | undefined, toolName: string, command: string | undefined): CallDecision | null {
  if (!rules) return null;
  let best: { found: CallDecision; weight: number } | null = null;
  for (const [key, decision] of Object.entries(rules)) {
    const glob = globOf(key);
    let weight: number;
    if (glob === null) {
      if (key !== toolName) continue;
      weight = -1;
    } else {
      if (toolName !== 'bash' || command === undefined || !globMatches(glob, command)) continue;
      weight = glob.replaceAll('*', '').length;
    }
    const found = { decision, rule: key };
    if (!best || weight > best.weight || (weight === best.weight && stricter(best.found, found) === found)) best = { found, weight };
  }
  return best?.found ?? null;
}

/** The rule named when a bash line cannot be parsed (see shell-commands.ts): it is asked. */
export const UNPARSED_RULE = 'bash (a line that cannot be parsed)';

const hasGlobs = (rules: Permissions) => Object.keys(rules).some((key) => globOf(key) !== null);

/**
 * What one source says of a call. With `bash(<glob>)` rules, bash is decided per simple command
 * (`commands`, from shell-commands.ts): each takes its most specific rule, and the strictest of
 * them applies, so a line is allowed only when every command in it is; null (a line that cannot
 * be parsed) is asked, unless the source denies bash outright.
 */
function decideSource(rules: Permissions | undefined, toolName: string, commands: string[] | null | undefined): CallDecision | null {
  if (!rules) return null;
  if (toolName !== 'bash' || commands === undefined || !hasGlobs(rules)) return matchOf(rules, toolName, undefined);
  const plain = matchOf(rules, 'bash', undefined);
  if (commands === null) return plain?.decision === 'deny' ? plain : { decision: 'ask', rule: UNPARSED_RULE };
  if (commands.length === 0) return plain;
  let worst: CallDecision = { decision: 'allow', rule: null };
  for (const command of commands) {
    const found = matchOf(rules, 'bash', command) ?? { decision: 'allow', rule: null };
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
export function decideCall(sources: Array<Permissions | undefined>, toolName: string, commands?: string[] | null): CallDecision {
  let out: CallDecision = { decision: 'allow', rule: null };
  for (const rules of sources) {
    const found = decideSource(rules, toolName, commands);
    // As strict or stricter: the answer names the rule that gave it.
    if (found && STRICTNESS[found.decision] >= STRICTNESS[out.decision]) out = found;
  }
  return out;
}

/** Does any source hold a `bash(<glob>)` rule (then bash lines must be parsed to be decided)? */
export const needsCommands = (sources: Array<Permissions | undefined>) => sources.some((rules) => rules !== undefined && hasGlobs(rules));

/**
 * Is the tool denied whole by one of the sources (then it is not offered to the model at all)? Its
 * plain rule is `deny` and no narrower `bash(<glob>)` rule of that source lets a call through.
 */
export function deniedWhole(sources: Array<Permissions | undefined>, toolName: string): boolean {
  return sources.some((rules) => {
    if (!rules || rules[toolName] !== 'deny') return false;
    if (toolName !== 'bash') return true;
    return !Object.entries(rules).some(([key, decision]) => globOf(key) !== null && decision !== 'deny');
  });
}
