import { createServer, type AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createPool, redactUrl } from './postgres.ts';

describe('redactUrl', () => {
  it('hides the password of a database URL and keeps the rest', () => {
    const shown = redactUrl('postgres://svc:s3cret-p%40ss@db.internal:5432/subagentd?sslmode=require');
    expect(shown).not.toContain('s3cret');
    expect(shown).toBe('postgres://svc:***@db.internal:5432/subagentd?sslmode=require');
  });

  it('never echoes an unparsable URL, which may hold a password', () => {
    expect(redactUrl('postgres://user:pw@[bad')).toBe('postgres://(unparsable URL)');
  });
});

/** A server's messages (PostgreSQL's wire protocol v3): a type byte, an int32 length, the body. */
const message = (type: string, body: Buffer) => {
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
};
const int32 = (n: number) => Buffer.from([n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]);
const fields = (f: Record<string, string>) => Buffer.concat([...Object.entries(f).map(([k, v]) => Buffer.from(`${k}${v}\0`, 'latin1')), Buffer.from([0])]);

describe('createPool', () => {
  it('lives through a server that says farewell in the packet that opens the connection: its statements fail, the process goes on', async () => {
    // A restart's fast shutdown (57P01) reaching a connection just as it opens: the start's last
    // message and the farewell come in one write, so in one packet.
    const opening = Buffer.concat([
      message('R', int32(0)),
      message('Z', Buffer.from('I')),
      message('E', fields({ S: 'FATAL', V: 'FATAL', C: '57P01', M: 'terminating connection due to administrator command' })),
    ]);
    const server = createServer((socket) => {
      socket.on('error', () => {});
      socket.once('data', () => socket.write(opening));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const pool = createPool(`postgres://svc@127.0.0.1:${(server.address() as AddressInfo).port}/db`);
    try {
      const conn = await pool.connect();
      await expect(conn.query('SELECT 1')).rejects.toThrow(/not queryable|terminat/);
      conn.release(true);
    } finally {
      await pool.end();
      server.close();
    }
  });
});
