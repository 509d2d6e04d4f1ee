import { describe, expect, it } from 'vitest';
import { commandName, shellLine, wrappedAt } from './shell-wrappers.ts';

describe('where a wrapper starts the command it runs', () => {
  it('skips the options (and their values) and the positional arguments before the command', () => {
    expect(wrappedAt('timeout', ['-s', 'KILL', '5', 'rm', 'x'])).toBe(3);
    expect(wrappedAt('nice', ['-n', '3', 'rm'])).toBe(2);
    expect(wrappedAt('env', ['LANG=C', 'X=1', 'rm'])).toBe(2);
    expect(wrappedAt('sudo', ['--', 'rm'])).toBe(1);
    expect(wrappedAt('xargs', ['-0', 'rm'])).toBe(1);
  });

  it('answers null when it wraps nothing, false when that cannot be known', () => {
    expect(wrappedAt('env', ['LANG=C'])).toBeNull();
    expect(wrappedAt('command', [])).toBeNull();
    expect(wrappedAt('env', ['-S', 'rm x'])).toBe(false);
    expect(wrappedAt('env', ['--split-string=rm x'])).toBe(false);
    expect(wrappedAt('nice', [null, 'rm'])).toBe(false);
    expect(wrappedAt('timeout', ['5', null])).toBe(false);
  });
});

describe('the line a shell runs', () => {
  it('is the argument of -c, options before it skipped', () => {
    expect(shellLine(['-c', 'rm x'])).toBe('rm x');
    expect(shellLine(['-ec', 'rm x'])).toBe('rm x');
    expect(shellLine(['-o', 'pipefail', '-c', 'rm x'])).toBe('rm x');
  });

  it('is null for a script file (the rule sees the shell), false when it is unknowable', () => {
    expect(shellLine(['script.sh'])).toBeNull();
    expect(shellLine(['-c', null])).toBe(false);
    expect(shellLine(['-s'])).toBe(false);
    expect(shellLine([])).toBe(false);
    expect(shellLine(['/dev/stdin'])).toBe(false);
    expect(shellLine(['/proc/self/fd/0'])).toBe(false);
  });
});

describe('a command name', () => {
  it('is its last path component', () => {
    expect(commandName('/usr/bin/rm')).toBe('rm');
    expect(commandName('rm')).toBe('rm');
  });
});
