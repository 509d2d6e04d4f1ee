import { ulid } from '../util/ids.ts';
import type { KeyGrant, KeyRole } from '../shapes/access.ts';
import { nextPage } from './paging.ts';
import { apiKeys, auditLog } from './schema.ts';
import { rowReader } from './rows.ts';
import type { SqlClient } from './sql-client.ts';

export type ApiKeyRow = typeof apiKeys.$inferSelect;
export type AuditRow = typeof auditLog.$inferSelect;

const readKey = rowReader(apiKeys);
const readAudit = rowReader(auditLog);

/** One entry of the audit log as written: who (a key's fingerprint), what, on what. */
export interface AuditEntry {
  tenant: string;
  key: string;
  action: string;
  target: string;
}

/** Keys made by admins (`/keys`, stored as their SHA-256 only) and the audit log. */
export function createAccessStore(sql: SqlClient) {
  return {
    /** The live key whose SHA-256 (hex) is `hash`, with its id. */
    async grantOf(hash: string): Promise<(KeyGrant & { id: string }) | undefined> {
      const row = await sql.get<{ id: string; tenant: string; role: KeyRole }>('SELECT id, tenant, role FROM api_keys WHERE hash = ? AND revoked_at IS NULL', [
        hash,
      ]);
      return row && { id: row.id, tenant: row.tenant, role: row.role };
    },

    async createKey(key: { tenant: string; role: KeyRole; name: string | null; hash: string }, at: number): Promise<ApiKeyRow> {
      const id = `key_${ulid(at)}`;
      await sql.run('INSERT INTO api_keys (id, tenant, role, name, hash, created_at) VALUES (?, ?, ?, ?, ?, ?)', [
        id,
        key.tenant,
        key.role,
        key.name,
        key.hash,
        at,
      ]);
      return { id, ...key, createdAt: at, revokedAt: null };
    },

    /** Revokes a key of `tenant`; false when it has no such key (or it was revoked already). */
    async revokeKey(tenant: string, id: string, at: number): Promise<boolean> {
      return (await sql.run('UPDATE api_keys SET revoked_at = ? WHERE tenant = ? AND id = ? AND revoked_at IS NULL', [at, tenant, id])) > 0;
    },

    async listKeys(tenant: string): Promise<ApiKeyRow[]> {
      return (await sql.all('SELECT * FROM api_keys WHERE tenant = ? ORDER BY id DESC LIMIT 1000', [tenant])).map(readKey);
    },

    async audit(entry: AuditEntry, at: number): Promise<void> {
      await sql.run('INSERT INTO audit_log (id, tenant, at, key, action, target) VALUES (?, ?, ?, ?, ?, ?)', [
        `aud_${ulid(at)}`,
        entry.tenant,
        at,
        entry.key,
        entry.action.slice(0, 100),
        entry.target.slice(0, 500),
      ]);
    },

    /** A tenant's audit log, newest first, `limit` entries after `cursor`. */
    async auditPage(tenant: string, limit: number, cursor: string | undefined): Promise<{ rows: AuditRow[]; nextCursor: string | null }> {
      const rows = cursor
        ? await sql.all('SELECT * FROM audit_log WHERE tenant = ? AND id < ? ORDER BY id DESC LIMIT ?', [tenant, cursor, limit + 1])
        : await sql.all('SELECT * FROM audit_log WHERE tenant = ? ORDER BY id DESC LIMIT ?', [tenant, limit + 1]);
      return nextPage(rows.map(readAudit), limit);
    },
  };
}

export type AccessStore = ReturnType<typeof createAccessStore>;
