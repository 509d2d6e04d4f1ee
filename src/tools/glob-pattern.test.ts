import { describe, expect, it } from 'vitest';
import { compileGlob } from './glob-pattern.ts';

const matches = (pattern: string, paths: string[]) => {
  const m = compileGlob(pattern);
  return paths.filter((p) => m.test(p));
};

describe('compileGlob', () => {
  const paths = ['a.md', 'b.txt', '.hidden.md', 'docs/x.md', 'docs/deep/y.md', 'src/app.ts', 'src/app.test.ts', 'docs'];

  it('matches the usual shapes', () => {
    expect(matches('*.md', paths)).toEqual(['a.md', '.hidden.md']);
    expect(matches('**/*.md', paths)).toEqual(['a.md', '.hidden.md', 'docs/x.md', 'docs/deep/y.md']);
    expect(matches('docs/**', paths)).toEqual(['docs/x.md', 'docs/deep/y.md']);
    expect(matches('src/*.{ts,md}', paths)).toEqual(['src/app.ts', 'src/app.test.ts']);
    expect(matches('src/app.{test.,}ts', paths)).toEqual(['src/app.ts', 'src/app.test.ts']);
    expect(matches('?.md', paths)).toEqual(['a.md']);
    expect(matches('[ab].*', paths)).toEqual(['a.md', 'b.txt']);
    expect(matches('[!a].*', paths)).toEqual(['b.txt']);
    expect(matches('docs', paths)).toEqual(['docs']);
    expect(matches('\\*.md', ['*.md', 'a.md'])).toEqual(['*.md']);
  });

  it('treats regex metacharacters as literals', () => {
    expect(matches('a+(b).md', ['a+(b).md', 'aab.md'])).toEqual(['a+(b).md']);
  });

  it('compiles a brace bomb into one linear program instead of expanding it', () => {
    const bomb = '{a,b,c,d}'.repeat(100);
    const m = compileGlob(bomb);
    expect(m.test('a'.repeat(100))).toBe(true);
    expect(m.test('a'.repeat(99) + 'x')).toBe(false);
  });

  it('refuses what would name a place outside the workspace, also inside braces', () => {
    for (const p of ['../x', 'a/../../x', '/etc/*', '{/etc/*,x}', '{x,../../*}', 'a/{b,..}/c']) {
      expect(() => compileGlob(p), p).toThrow(/may not contain "\.\." or start with "\/"/);
    }
  });

  it('refuses unbounded or broken patterns with a reason', () => {
    expect(() => compileGlob('x'.repeat(2000))).toThrow(/longer than/);
    expect(() => compileGlob('{'.repeat(9) + '}'.repeat(9))).toThrow(/nested deeper/);
    expect(() => compileGlob('{a,b')).toThrow(/unclosed/);
  });
});
