import { RE2JS } from 're2js';
import { compileRe2, type SafeRegex } from './user-regex.ts';

const MAX_GLOB_LENGTH = 1024;
const MAX_BRACE_DEPTH = 8;

/**
 * Compiles a workspace glob (`*`, `**`, `?`, `[abc]`, `[!abc]`, `{a,b}` nested, `\` escapes) into
 * a matcher of `/`-separated relative paths. Braces become alternation inside one RE2 program
 * instead of being expanded, so `{a,b}{a,b}...` costs its length, not 2^n patterns, and RE2 matches
 * in linear time. Library globbers (micromatch, picomatch) either expand braces or compile to
 * backtracking regular expressions, which is exactly what a hostile pattern exploits.
 *
 * A pattern with a `..` segment or an absolute alternative is refused: the walk starts at the
 * workspace root and could not leave it anyway, but the model should learn why nothing matched.
 */
export function compileGlob(pattern: string): SafeRegex {
  if (pattern.length > MAX_GLOB_LENGTH) throw new Error(`glob pattern longer than ${MAX_GLOB_LENGTH} characters`);
  if (/(^|[/{,])\.\.($|[/},])/.test(pattern) || /(^|[{,])\//.test(pattern)) {
    throw new Error('glob patterns are relative to the workspace and may not contain ".." or start with "/"');
  }
  let out = '';
  let depth = 0;
  const atSegmentStart = (i: number) => i === 0 || '/{,'.includes(pattern[i - 1]);
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\') {
      if (i + 1 < pattern.length) out += RE2JS.quote(pattern[++i]);
    } else if (c === '*') {
      if (pattern[i + 1] === '*' && atSegmentStart(i) && (i + 2 === pattern.length || pattern[i + 2] === '/')) {
        // `**/` : any number of whole folders; a trailing `**`: anything below.
        if (pattern[i + 2] === '/') {
          out += '(?:[^/]*/)*';
          i += 2;
        } else {
          out += '.*';
          i += 1;
        }
      } else {
        while (pattern[i + 1] === '*') i++;
        out += '[^/]*';
      }
    } else if (c === '?') {
      out += '[^/]';
    } else if (c === '[') {
      const end = classEnd(pattern, i);
      if (end === -1) {
        out += '\\[';
        continue;
      }
      let body = pattern.slice(i + 1, end);
      const negated = body[0] === '!' || body[0] === '^';
      if (negated) body = body.slice(1);
      out += `[${negated ? '^/' : ''}${body.replace(/[\\[\]]/g, '\\$&')}]`;
      i = end;
    } else if (c === '{') {
      if (++depth > MAX_BRACE_DEPTH) throw new Error(`glob braces nested deeper than ${MAX_BRACE_DEPTH}`);
      out += '(?:';
    } else if (c === '}' && depth > 0) {
      depth--;
      out += ')';
    } else if (c === ',' && depth > 0) {
      out += '|';
    } else {
      out += RE2JS.quote(c);
    }
  }
  if (depth > 0) throw new Error(`glob pattern "${pattern}" has an unclosed "{"`);
  return compileRe2(`^(?:${out})$`);
}

/** Index of the `]` closing the class opened at `start`, or -1 (a `]` first in the class is literal). */
function classEnd(pattern: string, start: number): number {
  let i = start + 1;
  if (pattern[i] === '!' || pattern[i] === '^') i++;
  if (pattern[i] === ']') i++;
  for (; i < pattern.length; i++) if (pattern[i] === ']') return i;
  return -1;
}
