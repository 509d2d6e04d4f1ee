import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSkills, MAX_SKILL_PROMPT_BYTES, MAX_SKILLS_PROMPT_BYTES, preloadSkills, SKILL_NAME, type Skill } from './skills.ts';

let dir: string;
const skill = (folder: string, text: string) => {
  mkdirSync(path.join(dir, folder), { recursive: true });
  writeFileSync(path.join(dir, folder, 'SKILL.md'), text);
};

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'subagentd-skills-unit-'));
  writeFileSync(path.join(dir, '..', `${path.basename(dir)}-secret.md`), '---\nname: linked\ndescription: d\n---\nSECRET');
  skill('good', '---\nname: good\ndescription: Does good things.\nlicense: MIT\nmetadata:\n  author: x\n---\n\nThe body.\n');
  skill('huge', `---\nname: huge\ndescription: d\n---\n${'x'.repeat(300 * 1024)}`);
  skill('Bad-Name', '---\nname: Bad-Name\ndescription: d\n---\n');
  skill('nodesc', '---\nname: nodesc\n---\nbody');
  skill('other', '---\nname: not-other\ndescription: d\n---\n');
  mkdirSync(path.join(dir, 'empty'));
  mkdirSync(path.join(dir, 'linked'));
  symlinkSync(path.join(dir, '..', `${path.basename(dir)}-secret.md`), path.join(dir, 'linked', 'SKILL.md'));
  mkdirSync(path.join(dir, 'fifo'));
  spawnSync('mkfifo', [path.join(dir, 'fifo', 'SKILL.md')]);
  writeFileSync(path.join(dir, 'README.md'), 'not a skill');
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(path.join(dir, '..', `${path.basename(dir)}-secret.md`), { force: true });
});

describe('loadSkills', () => {
  it('loads a valid skill, and reports (and skips) every broken one', () => {
    const { skills, errors } = loadSkills(dir);
    expect(skills).toEqual([{ name: 'good', description: 'Does good things.', license: 'MIT', dir: path.join(dir, 'good'), body: 'The body.' }]);
    const why = Object.fromEntries(errors.map((e) => [path.basename(e.dir), e.message]));
    expect(why).toEqual({
      'Bad-Name': expect.stringContaining('name: a skill name is 1-64 of a-z'),
      empty: 'has no SKILL.md',
      fifo: 'SKILL.md is not a regular file',
      huge: expect.stringMatching(/SKILL\.md has \d+ bytes, over the limit of 262144/),
      linked: expect.stringContaining('ELOOP'),
      nodesc: expect.stringContaining('description'),
      other: 'name: "not-other" is not the name of its folder ("other")',
    });
  });

  it('finds nothing in a missing folder', () => {
    expect(loadSkills(path.join(dir, 'nowhere'))).toEqual({ skills: [], errors: [] });
  });

  it("takes the format's names only", () => {
    for (const ok of ['a', 'pdf-tools', 'x1-2', 'a'.repeat(64)]) expect(SKILL_NAME.test(ok), ok).toBe(true);
    for (const bad of ['', '-a', 'a-', 'a--b', 'A', 'a_b', 'a.b', '..', 'a/b', 'a'.repeat(65)]) expect(SKILL_NAME.test(bad), bad).toBe(false);
  });
});

describe('preloadSkills', () => {
  const of = (name: string, bytes: number): Skill => ({ name, description: 'd', dir: '/x', body: 'é'.repeat(bytes / 2) });

  it('cuts a body at 16 KiB, never in a character, and all bodies at 64 KiB together', () => {
    const loaded = preloadSkills([of('a', 40 * 1024), of('b', 1000), of('c', 30 * 1024), of('d', 30 * 1024), of('e', 30 * 1024), of('f', 10)]);
    expect(loaded.map((s) => [s.name, s.body === null ? null : Buffer.byteLength(s.body), s.cut])).toEqual([
      ['a', MAX_SKILL_PROMPT_BYTES, true],
      ['b', 1000, false],
      ['c', MAX_SKILL_PROMPT_BYTES, true],
      ['d', MAX_SKILL_PROMPT_BYTES, true],
      // What room is left of the 64 KiB, then none.
      ['e', MAX_SKILLS_PROMPT_BYTES - 3 * MAX_SKILL_PROMPT_BYTES - 1000, true],
      ['f', null, true],
    ]);
    expect(loaded[0].body).toBe('é'.repeat(MAX_SKILL_PROMPT_BYTES / 2));
    expect(loaded.map((s) => s.folder)).toEqual(['.skills/a', '.skills/b', '.skills/c', '.skills/d', '.skills/e', '.skills/f']);
  });
});
