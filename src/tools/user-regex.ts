import { RE2JS } from 're2js';

/** Longest pattern accepted from a model or a client (RE2 compiles in time linear in its length). */
export const MAX_PATTERN_LENGTH = 4096;

/** A compiled pattern whose matching time is linear in the input, whatever the pattern. */
export interface SafeRegex {
  /** True when the pattern occurs anywhere in `text`. */
  test(text: string): boolean;
}

/**
 * Compiles a user-supplied regular expression with RE2 (re2js, a pure-JavaScript port): no
 * backtracking, so no pattern can block the event loop (JavaScript's own engine takes exponential
 * time on patterns such as `(a+)+$`). RE2 has no lookaround and no backreferences; such a pattern
 * is refused with RE2's reason. Throws an Error whose message is written for the caller.
 */
export function compileSafeRegex(pattern: string, flags = 0): SafeRegex {
  if (pattern.length > MAX_PATTERN_LENGTH) {
    throw new Error(`regular expression longer than ${MAX_PATTERN_LENGTH} characters`);
  }
  let re: RE2JS;
  try {
    re = RE2JS.compile(RE2JS.translateRegExp(pattern), flags);
  } catch (err) {
    throw new Error(`invalid regular expression /${pattern}/: ${(err as Error).message} (RE2 syntax: no lookaround, no backreferences)`, { cause: err });
  }
  return { test: (text) => re.test(text) };
}

/** Compiles a glob's own translation, which is RE2 syntax already. */
export function compileRe2(source: string): SafeRegex {
  const re = RE2JS.compile(source);
  return { test: (text) => re.testExact(text) };
}
