import pg from 'pg';
import { CHANNELS } from './cluster-store.ts';

/** With the hash of the instance id: held by the one process that runs as that instance (see `openPostgres`). */
const INSTANCE_LOCK = 0x5a6d_0002;

/**
 * Takes the lock of `instanceId` on a connection of its own, and listens there to what the other
 * instances say; null when another process holds it. The server releases a session lock when its
 * connection ends, so the process that holds it must be connected: if the connection drops (a
 * server restart, a network cut), `onLost` is told.
 */
export async function takeInstanceLock(
  url: string,
  instanceId: string,
  onLost: () => void,
  onNotification: (channel: string, payload: string) => void,
): Promise<pg.Client | null> {
  const holder = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  holder.on('error', () => undefined);
  try {
    await holder.connect();
    const held =
      (await holder.query<{ held: boolean }>('SELECT pg_try_advisory_lock($1, hashtext($2)) AS held', [INSTANCE_LOCK, instanceId])).rows[0]?.held === true;
    if (!held) {
      await holder.end();
      return null;
    }
    holder.on('notification', (n) => onNotification(n.channel, n.payload ?? ''));
    for (const channel of Object.values(CHANNELS)) await holder.query(`LISTEN ${channel}`);
  } catch (err) {
    // A server that went away halfway (restarting): the connection, and the lock it may hold, go
    // with it, so the next try (a start that waits for the database) does not find itself in use.
    await holder.end().catch(() => undefined);
    throw err;
  }
  holder.once('end', onLost);
  return holder;
}
