import { describe, expect, it } from 'vitest';
import { globMatches } from '../util/glob-matches.ts';
import { decideCall, deniedWhole, UNPARSED_RULE } from './permissions.ts';

describe('permission rules', () => {
  it('matches a glob against one simple command: * is anything, slashes and spaces included', () => {
    expect(globMatches('git *', 'git status')).toBe(true);
    expect(globMatches('git *', 'git')).toBe(false);
    expect(globMatches('git *', 'sudo git push')).toBe(false);
    expect(globMatches('* /etc/*', 'cat /etc/passwd')).toBe(true);
    expect(globMatches('*a*a*a*a*a*a*b', 'a'.repeat(5000))).toBe(false);
  });

  it('takes the most specific rule of a source: a bash glob over the tool, the longest literal text among globs', () => {
    const def = { bash: 'deny', 'bash(git *)': 'allow', 'bash(git push *)': 'ask' } as const;
    expect(decideCall([def], 'bash', ['git status'])).toEqual({ decision: 'allow', rule: 'bash(git *)' });
    expect(decideCall([def], 'bash', ['git push origin main'])).toEqual({ decision: 'ask', rule: 'bash(git push *)' });
    expect(decideCall([def], 'bash', ['rm -rf .'])).toEqual({ decision: 'deny', rule: 'bash' });
    expect(decideCall([def], 'read_file')).toEqual({ decision: 'allow', rule: null });
  });

  it("applies the stricter of the definition's and the task's answers: a task narrows, never widens", () => {
    const def = { bash: 'ask', write_file: 'deny' } as const;
    const widen = { bash: 'allow', 'bash(*)': 'allow', write_file: 'allow' } as const;
    expect(decideCall([def, widen], 'bash', ['ls'])).toMatchObject({ decision: 'ask', rule: 'bash' });
    expect(decideCall([def, widen], 'write_file')).toMatchObject({ decision: 'deny', rule: 'write_file' });
    expect(decideCall([undefined, { 'bash(curl *)': 'deny' }], 'bash', ['curl x'])).toEqual({ decision: 'deny', rule: 'bash(curl *)' });
  });

  it('allows a line only when every simple command in it is allowed; denies or asks when any command matches', () => {
    const readme = { bash: 'ask', 'bash(git status*)': 'allow', 'bash(rm *)': 'deny' } as const;
    expect(decideCall([readme], 'bash', ['git status', 'git status --short'])).toEqual({ decision: 'allow', rule: 'bash(git status*)' });
    expect(decideCall([readme], 'bash', ['git status', 'touch X'])).toEqual({ decision: 'ask', rule: 'bash' });
    expect(decideCall([readme], 'bash', ['git status', 'rm -rf x', 'touch X'])).toEqual({ decision: 'deny', rule: 'bash(rm *)' });
    expect(decideCall([{ 'bash(rm *)': 'deny' }], 'bash', ['ls', 'echo ok'])).toEqual({ decision: 'allow', rule: null });
  });

  it('asks for a line that cannot be parsed, unless the source denies bash outright', () => {
    expect(decideCall([{ 'bash(git *)': 'allow' }], 'bash', null)).toEqual({ decision: 'ask', rule: UNPARSED_RULE });
    expect(decideCall([{ bash: 'deny', 'bash(git *)': 'allow' }], 'bash', null)).toEqual({ decision: 'deny', rule: 'bash' });
    // Without a bash(<glob>) rule nothing needs parsing: the plain rule (or the default) applies.
    expect(decideCall([{ bash: 'allow' }], 'bash', null)).toEqual({ decision: 'allow', rule: 'bash' });
    expect(decideCall([undefined], 'bash', null)).toEqual({ decision: 'allow', rule: null });
  });

  it('removes a tool from the model only when a source denies it with no narrower rule letting a call through', () => {
    expect(deniedWhole([{ write_file: 'deny' }], 'write_file')).toBe(true);
    expect(deniedWhole([{ bash: 'deny', 'bash(git *)': 'allow' }], 'bash')).toBe(false);
    expect(deniedWhole([{ bash: 'deny', 'bash(rm *)': 'deny' }], 'bash')).toBe(true);
    expect(deniedWhole([undefined, { bash: 'ask' }], 'bash')).toBe(false);
  });
});
