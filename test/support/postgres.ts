import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';

/**
 * A throwaway PostgreSQL cluster for the tests: initdb in a temporary folder, the server on
 * loopback on a free port, no password (trust, loopback only), removed when stopped. Debian's
 * binaries (/usr/lib/postgresql/<v>/bin) or any initdb on PATH; as root, the cluster runs as the
 * `postgres` user, since initdb refuses root.
 */
export interface TestPostgres {
  /** The admin URL (database `postgres`). */
  url: string;
  /** The URL of database `name` on this cluster. */
  urlOf(name: string): string;
  /** Stops the server, keeping its data (an outage); `start` brings it back on the same port. */
  pause(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

function binDir(): string | null {
  const debian = '/usr/lib/postgresql';
  if (existsSync(debian)) {
    const versions = readdirSync(debian)
      .filter((v) => existsSync(path.join(debian, v, 'bin/initdb')))
      .sort((a, b) => Number(b) - Number(a));
    if (versions[0]) return path.join(debian, versions[0], 'bin');
  }
  try {
    return path.dirname(execFileSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' }).trim()) || null;
  } catch {
    return null;
  }
}

/** Whether this machine can start a test cluster (PostgreSQL's binaries are installed). */
export const postgresAvailable = () => binDir() !== null;

/** A free TCP port on loopback. */
export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

export async function startTestPostgres(): Promise<TestPostgres> {
  const bin = binDir();
  if (!bin) throw new Error('PostgreSQL is not installed: apt-get install postgresql (or put initdb on PATH)');
  const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-pg-'));
  // As root, the cluster's processes run as the `postgres` user (the process itself switches to
  // it, so signals reach the server directly).
  const user =
    process.getuid?.() === 0
      ? { uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' })), gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' })) }
      : {};
  if (user.uid !== undefined) chownSync(dir, user.uid, user.gid);
  const data = path.join(dir, 'data');
  execFileSync(path.join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8', '--locale=C'], {
    stdio: 'pipe',
    cwd: dir,
    ...user,
  });
  const port = await freePort();
  // Durability of the cluster itself is not under test (the service's processes are what get killed).
  const args = [
    '-D',
    data,
    '-p',
    String(port),
    '-h',
    '127.0.0.1',
    '-k',
    dir,
    '-c',
    'fsync=off',
    '-c',
    'synchronous_commit=off',
    '-c',
    'full_page_writes=off',
    '-c',
    'max_connections=400',
  ];
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let server: ChildProcess;
  async function start() {
    server = spawn(path.join(bin!, 'postgres'), args, { stdio: 'ignore', cwd: dir, ...user });
    const deadline = Date.now() + 30_000;
    for (;;) {
      const c = new pg.Client({ connectionString: url });
      try {
        await c.connect();
        await c.end();
        return;
      } catch (err) {
        await c.end().catch(() => undefined);
        if (server.exitCode !== null || Date.now() > deadline) throw new Error(`PostgreSQL did not start: ${(err as Error).message}`, { cause: err });
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }
  async function pause() {
    if (server.exitCode !== null || server.signalCode !== null) return;
    const exited = new Promise((r) => server.once('exit', r));
    // Fast shutdown (sessions are ended); a server that does not stop in 10 s is killed.
    server.kill('SIGINT');
    const late = setTimeout(() => server.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(late);
  }
  await start();
  return {
    url,
    urlOf: (name) => `postgres://postgres@127.0.0.1:${port}/${name}`,
    pause,
    start,
    async stop() {
      await pause();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A database name for a test folder: the same folder, the same database (a restarted service finds its data). */
export const databaseNameOf = (dir: string) => `t_${createHash('sha256').update(dir).digest('hex').slice(0, 16)}`;

/** Creates database `name` on the cluster of `adminUrl` unless it exists. */
export async function ensureDatabase(adminUrl: string, name: string): Promise<void> {
  const c = new pg.Client({ connectionString: adminUrl });
  await c.connect();
  try {
    await c.query(`CREATE DATABASE ${name}`);
  } catch (err) {
    if ((err as { code?: string }).code !== '42P04') throw err;
  } finally {
    await c.end();
  }
}

/**
 * On a PostgreSQL test run (TEST_POSTGRES_URL, set by the global setup), the URL of the database of
 * test folder `dir`, created if needed; null on SQLite runs.
 */
export async function testDatabaseUrl(dir: string): Promise<string | null> {
  const admin = process.env.TEST_POSTGRES_URL;
  if (!admin) return null;
  const name = databaseNameOf(dir);
  await ensureDatabase(admin, name);
  return admin.replace(/\/postgres$/, `/${name}`);
}

/**
 * Whether a test that starts PostgreSQL clusters of its own runs here: in the SQLite pass,
 * wherever PostgreSQL's binaries are installed. When it does not, says why in one line, like
 * the other tests that skip.
 */
export function ownClustersRun(name: string): boolean {
  if (process.env.TEST_DATABASE === 'postgres') {
    console.warn(`[${name}] skipped in the PostgreSQL pass: it starts PostgreSQL clusters of its own and runs in npm test`);
    return false;
  }
  if (!postgresAvailable()) {
    console.warn(`[${name}] skipped: PostgreSQL's binaries (initdb) are not installed; apt-get install postgresql to run it`);
    return false;
  }
  return true;
}
