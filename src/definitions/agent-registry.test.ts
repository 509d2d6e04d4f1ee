import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadAgentFiles } from './load-agent-files.ts';
import { builtinAgents, createAgentRegistry, resolveModelName, resolveTools } from './agent-registry.ts';

const names = { defaultModel: 'big', smallModel: 'small-one' };

describe('resolveTools', () => {
  it('starts from every workspace tool, always adds complete', () => {
    expect(resolveTools(undefined, undefined).sort()).toEqual(['bash', 'complete', 'edit_file', 'glob', 'grep', 'list_files', 'read_file', 'write_file']);
  });

  it('applies the allow-list, then the deny-list, then removes the forbidden tools', () => {
    expect(resolveTools(['read_file', 'bash', 'task', 'confirm', 'ask_user_question'], ['bash'])).toEqual(['read_file', 'complete']);
    expect(resolveTools(undefined, ['complete'])).toContain('complete');
  });
});

describe('resolveModelName', () => {
  it('maps inherit and small, and keeps ids', () => {
    expect(resolveModelName(undefined, names)).toBe('big');
    expect(resolveModelName('inherit', names)).toBe('big');
    expect(resolveModelName('small', names)).toBe('small-one');
    expect(resolveModelName('qwen2.5:7b', names)).toBe('qwen2.5:7b');
  });
});

describe('createAgentRegistry', () => {
  it('lets a later definition override an earlier one by type', () => {
    const [general] = builtinAgents(names);
    const registry = createAgentRegistry([...builtinAgents(names), { ...general, description: 'mine' }]);
    expect(registry.types()).toEqual(['general', 'explore', 'plan', 'shell']);
    expect(registry.get('general')!.description).toBe('mine');
    expect(registry.get('nope')).toBeUndefined();
  });
});

describe('a definition’s image (SANDBOX=container)', () => {
  it('is loaded from the front matter, and a malformed one is refused naming the field', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-image-def-'));
    try {
      writeFileSync(path.join(dir, 'py.md'), '---\nname: py\ndescription: Python work\nimage: registry.example.com/tools/python:3.12\n---\nUse python.\n');
      writeFileSync(path.join(dir, 'bad.md'), '---\nname: bad\ndescription: Bad image\nimage: "Python 3; rm -rf /"\n---\nx\n');
      const { definitions, errors } = loadAgentFiles(dir, names);
      expect(definitions.map((d) => [d.type, d.image])).toEqual([['py', 'registry.example.com/tools/python:3.12']]);
      expect(errors).toEqual([expect.objectContaining({ name: 'bad', field: 'image', message: expect.stringContaining('must be an image reference') })]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
