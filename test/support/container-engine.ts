import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Docker from 'dockerode';
import { INSTANCE_LABEL } from '../../src/sandbox/container-sandbox';

/**
 * The Docker Engine API the container sandbox's tests use: DOCKER_HOST (podman's compatible
 * socket on CI: .ci/podman-service), and SANDBOX_TEST_BASE_IMAGE, a local image with bash and
 * coreutils (Debian's minbase there) the tests build their own small images from.
 */
export const BASE_IMAGE = process.env.SANDBOX_TEST_BASE_IMAGE ?? 'localhost/subagentd-sandbox-base:bookworm';
export const DOCKER_HOST = process.env.DOCKER_HOST ?? 'unix:///var/run/docker.sock';

export function engineClient(): Docker {
  return DOCKER_HOST.startsWith('unix://') ? new Docker({ socketPath: DOCKER_HOST.slice(7) }) : new Docker();
}

/** Why the container tests cannot run here (no engine answers, no base image), or null when they can. */
export async function engineMissing(docker: Docker): Promise<string | null> {
  try {
    await docker.ping();
  } catch (err) {
    return `no Docker Engine API answers at DOCKER_HOST=${DOCKER_HOST} (${(err as Error).message})`;
  }
  try {
    await docker.getImage(BASE_IMAGE).inspect();
  } catch {
    return `the base image ${BASE_IMAGE} is not on the engine (SANDBOX_TEST_BASE_IMAGE names another)`;
  }
  return null;
}

/**
 * An image `tag` made from the base with `files` added (path inside → content): a container of
 * the base, the files put in as a tar, committed. No registry and no build needed.
 */
export async function imageWith(docker: Docker, tag: string, files: Record<string, string>): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-image-'));
  try {
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(path.join(dir, path.dirname(name)), { recursive: true });
      // A script is made executable.
      writeFileSync(path.join(dir, name), text, { mode: text.startsWith('#!') ? 0o755 : 0o644 });
    }
    const tar = execFileSync('tar', ['-c', '-C', dir, '--owner=0', '--group=0', '.']);
    // Twice at most: podman's API has been seen to drop an archive's upload on a loaded machine.
    for (let attempt = 1; ; attempt++) {
      const c = await docker.createContainer({ Image: BASE_IMAGE, Cmd: ['true'] });
      try {
        await c.putArchive(tar, { path: '/' });
        const [repo, version] = tag.split(/:(?=[^:/]+$)/);
        await c.commit({ repo, tag: version ?? 'latest' });
        return;
      } catch (err) {
        if (attempt >= 2) throw err;
      } finally {
        await c.remove({ force: true });
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The sandbox containers of an instance, running or not. */
export async function containersOf(docker: Docker, instanceId: string) {
  return docker.listContainers({ all: true, filters: { label: [`${INSTANCE_LABEL}=${instanceId}`] } });
}

/** Bytes of an image as the engine reports it (its size with its base's layers). */
export async function imageSize(docker: Docker, tag: string): Promise<number> {
  return (await docker.getImage(tag).inspect()).Size;
}
