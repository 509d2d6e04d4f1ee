import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../src/app';
import { loadConfig } from '../src/config/config';
import { closeDatabase, openDatabase } from '../src/store/database';

describe('requests that arrive together', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-turns-'));
  const opened: Array<{ app: App; db: Awaited<ReturnType<typeof openDatabase>> }> = [];
  /** An app in this process (its event loop is the test's), with LOOP_SLICE_MS as given. */
  async function appWith(loopSliceMs: string): Promise<App> {
    const config = loadConfig({
      DATABASE_PATH: path.join(dir, `db-${loopSliceMs}.sqlite`),
      WORKSPACES_DIR: path.join(dir, 'ws'),
      LOG_LEVEL: 'silent',
      BASH_SANDBOX: 'none',
      RATE_LIMIT_PER_MINUTE: '100000',
      LOOP_SLICE_MS: loopSliceMs,
    });
    const db = await openDatabase(config.databasePath);
    const app = await createApp({ config, db, logger: pino({ level: 'silent' }) });
    opened.push({ app, db });
    await app.server.ready();
    return app;
  }
  afterAll(async () => {
    for (const { app, db } of opened) {
      await app.server.close();
      await closeDatabase(db);
    }
    rmSync(dir, { recursive: true, force: true });
  });

  /** Sends `n` requests at once; how many were answered when a timer due at once ran (-1: after all). */
  async function burst(app: App, n: number): Promise<{ statuses: number[]; answeredWhenTimerRan: number }> {
    let answered = 0;
    let answeredWhenTimerRan = -1;
    setTimeout(() => void (answeredWhenTimerRan = answered), 0);
    const statuses = await Promise.all(
      Array.from({ length: n }, async () => {
        const res = await app.server.inject({ method: 'GET', url: '/agents' });
        answered++;
        return res.statusCode;
      }),
    );
    return { statuses, answeredWhenTimerRan };
  }

  it('are answered in turns of the event loop: a timer due meanwhile runs before the last of them, and every one is answered', async () => {
    const app = await appWith('10');
    const { statuses, answeredWhenTimerRan } = await burst(app, 1500);
    expect(statuses).toHaveLength(1500);
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(answeredWhenTimerRan).toBeGreaterThan(0);
    expect(answeredWhenTimerRan).toBeLessThan(1500);
    expect(app.slices.waiting).toBe(0);
  });

  it('with LOOP_SLICE_MS=0 are all answered before the loop takes a turn', async () => {
    const app = await appWith('0');
    const { statuses, answeredWhenTimerRan } = await burst(app, 1500);
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(answeredWhenTimerRan).toBe(-1);
  });
});
