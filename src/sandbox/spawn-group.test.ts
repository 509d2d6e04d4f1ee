import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { spawnGroup } from './spawn-group.ts';

/** Whether a process still runs (a zombie, waiting for its parent to reap it, does not). */
function running(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

const env = { PATH: '/usr/bin:/bin' };

describe('spawnGroup', () => {
  it('kills what the program started along with it', async () => {
    // The shell starts a grandchild, says its pid, and waits.
    const group = spawnGroup({ argv: ['/bin/sh', '-c', 'sleep 60 & echo $!; wait'], cwd: '/', env });
    const grandchild = await new Promise<number>((resolve) => group.child.stdout.once('data', (b: Buffer) => resolve(Number(b.toString().trim()))));
    expect(running(grandchild)).toBe(true);
    group.kill('SIGTERM');
    expect(await group.exited).toEqual({ code: null, signal: 'SIGTERM' });
    await expect.poll(() => running(grandchild)).toBe(false);
  });

  it('settles with the exit code, and a later kill is quiet', async () => {
    const group = spawnGroup({ argv: ['/bin/sh', '-c', 'exit 3'], cwd: '/', env });
    expect(await group.exited).toEqual({ code: 3, signal: null });
    expect(() => group.kill('SIGKILL')).not.toThrow();
  });

  it('settles with the error of a program that cannot start', async () => {
    const group = spawnGroup({ argv: ['/nonexistent/program'], cwd: '/', env });
    group.child.stdin.write('ignored\n');
    const exit = await group.exited;
    expect(exit.error?.message).toMatch(/ENOENT/);
    expect(() => group.kill('SIGKILL')).not.toThrow();
  });
});
