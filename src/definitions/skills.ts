import { closeSync, fstatSync, openSync, readdirSync, readSync, realpathSync, constants } from 'node:fs';
import path from 'node:path';
import { VFile } from 'vfile';
import { matter } from 'vfile-matter';
import { z } from 'zod';

/**
 * Skills in the Agent Skills format (agentskills.io): a folder `SKILLS_DIR/<name>/` holding
 * `SKILL.md` (YAML front matter `name` and `description`, then the instructions) and any files
 * beside it (scripts, references, assets). A definition's `skills` are preloaded: the body goes
 * into the system prompt, the folder is seen read-only at `.skills/<name>/`.
 */

/** The format's name: 1-64 of a-z, 0-9 and `-`, no `-` first, last or twice in a row. */
export const SKILL_NAME = /^(?!-)(?!.*--)[a-z0-9-]{1,64}(?<!-)$/;
export const skillNameSchema = z.string().regex(SKILL_NAME, 'a skill name is 1-64 of a-z, 0-9 and "-" (not first, last or doubled)');

/** Largest SKILL.md read; a bigger one is refused at start (the format asks for under 500 lines). */
const MAX_SKILL_FILE_BYTES = 256 * 1024;
/** Most of one skill's body a system prompt carries; the rest is cut, and the prompt says where to read it. */
export const MAX_SKILL_PROMPT_BYTES = 16 * 1024;
/** Most of all a task's skill bodies together; a skill past it is named with its description and folder only. */
export const MAX_SKILLS_PROMPT_BYTES = 64 * 1024;

/** The front matter of a SKILL.md: the format's fields; others (`metadata`, `allowed-tools`) are read and not used. */
const skillFileSchema = z.object({
  name: skillNameSchema,
  description: z.string().trim().min(1, 'is required').max(1024, 'is at most 1024 characters'),
  license: z.string().max(1024).optional(),
  compatibility: z.string().max(500, 'is at most 500 characters').optional(),
});

export interface Skill {
  name: string;
  description: string;
  license?: string;
  compatibility?: string;
  /** Real path of its folder (a link to the folder is resolved once, here). */
  dir: string;
  /** SKILL.md without its front matter, trimmed. */
  body: string;
}

export interface SkillError {
  dir: string;
  message: string;
}

export interface SkillRegistry {
  get(name: string): Skill | undefined;
  list(): Skill[];
}

export function createSkillRegistry(skills: Skill[]): SkillRegistry {
  const byName = new Map(skills.map((s) => [s.name, s]));
  return { get: (name) => byName.get(name), list: () => [...byName.values()] };
}

/** A regular file's first bytes, opened without following a link at its last name. */
function readSmallFile(file: string, max: number): string {
  const fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new Error('SKILL.md is not a regular file');
    if (stat.size > max) throw new Error(`SKILL.md has ${stat.size} bytes, over the limit of ${max}`);
    const buf = Buffer.alloc(stat.size);
    let filled = 0;
    while (filled < buf.length) {
      const n = readSync(fd, buf, filled, buf.length - filled, filled);
      if (n === 0) break;
      filled += n;
    }
    return buf.subarray(0, filled).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/**
 * Every skill of `dir` (a missing folder is none): each sub-folder with a SKILL.md whose front
 * matter is valid and whose `name` is the folder's. A broken one is reported and skipped; a
 * definition naming it then fails the start (checkSkills).
 */
export function loadSkills(dir: string): { skills: Skill[]; errors: SkillError[] } {
  const skills: Skill[] = [];
  const errors: SkillError[] = [];
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch {
    return { skills, errors };
  }
  for (const name of names) {
    if (name.startsWith('.')) continue;
    const folder = path.join(dir, name);
    try {
      // The operator may link a skill's folder in from elsewhere: resolved once, here.
      const real = realpathSync(folder);
      let text: string;
      try {
        text = readSmallFile(path.join(real, 'SKILL.md'), MAX_SKILL_FILE_BYTES);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOTDIR') continue; // a file beside the skills, not a skill
        throw code === 'ENOENT' ? new Error('has no SKILL.md') : err;
      }
      const vfile = new VFile({ path: path.join(real, 'SKILL.md'), value: text });
      matter(vfile, { strip: true });
      const parsed = skillFileSchema.safeParse(vfile.data.matter ?? {});
      if (!parsed.success) {
        for (const issue of parsed.error.issues) errors.push({ dir: folder, message: `${issue.path.join('.') || 'front matter'}: ${issue.message}` });
        continue;
      }
      const fm = parsed.data;
      if (fm.name !== name) {
        errors.push({ dir: folder, message: `name: "${fm.name}" is not the name of its folder ("${name}")` });
        continue;
      }
      skills.push({
        name,
        description: fm.description,
        ...(fm.license && { license: fm.license }),
        ...(fm.compatibility && { compatibility: fm.compatibility }),
        dir: real,
        body: String(vfile.value).trim(),
      });
    } catch (err) {
      errors.push({ dir: folder, message: (err as Error).message.split('\n')[0] });
    }
  }
  return { skills, errors };
}

/** The skills a definition names that `skills` does not hold, as one line each (empty: all known). */
export function unknownSkills(definitions: Array<{ type: string; skills?: string[] }>, skills: SkillRegistry, dir: string): string[] {
  const problems: string[] = [];
  for (const def of definitions) {
    for (const name of def.skills ?? []) {
      if (!skills.get(name)) problems.push(`subagent definition "${def.type}": unknown skill "${name}" (no valid ${path.join(dir, name, 'SKILL.md')})`);
    }
  }
  return problems;
}

/** One skill as a system prompt carries it. */
export interface PreloadedSkill {
  name: string;
  description: string;
  /** Where the task's tools see its folder, relative to the workspace root (`.skills/<name>`). */
  folder: string;
  /** The body, or its first MAX_SKILL_PROMPT_BYTES; null when the task's skills already filled MAX_SKILLS_PROMPT_BYTES. */
  body: string | null;
  cut: boolean;
}

/** The first `max` bytes of `text`, never half a character. */
function headBytes(text: string, max: number): string {
  const buf = Buffer.from(text);
  if (buf.length <= max) return text;
  // A continuation byte (10xxxxxx) would start half a character: back up to a character's start.
  let end = max;
  while (end > 0 && (buf[end] & 0xc0) === 0x80) end--;
  return buf.subarray(0, end).toString('utf8');
}

/** Where a skill's folder is seen by the file tools and commands, relative to the workspace root. */
export const skillFolder = (name: string) => `.skills/${name}`;

/**
 * A task's skills as its system prompt carries them: each body's first MAX_SKILL_PROMPT_BYTES,
 * all of them together at most MAX_SKILLS_PROMPT_BYTES; a skill that finds no room left is named
 * with its description and folder only (its SKILL.md is there to read).
 */
export function preloadSkills(skills: Skill[]): PreloadedSkill[] {
  let room = MAX_SKILLS_PROMPT_BYTES;
  return skills.map((s) => {
    const shown = { name: s.name, description: s.description, folder: skillFolder(s.name) };
    if (room <= 0 && s.body !== '') return { ...shown, body: null, cut: true };
    const head = headBytes(s.body, Math.min(MAX_SKILL_PROMPT_BYTES, room));
    room -= Buffer.byteLength(head);
    return { ...shown, body: head, cut: head.length < s.body.length };
  });
}
