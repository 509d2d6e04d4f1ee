import { rowReader } from './rows.ts';
import { tasks, type TaskRow } from './schema.ts';
import type { SqlClient } from './sql-client.ts';
import { WAITING_TASKS } from './task-store.ts';

const taskOf = rowReader(tasks);

/** Any number for subagentd's claims: one instance claims at a time, so the quotas are exact. */
const CLAIM_LOCK = 0x5a6d_0003;

/** What the instances tell each other (PostgreSQL NOTIFY channels). */
export const CHANNELS = {
  /** A task may start somewhere (stored, resumed, released) or a slot of a tenant was freed; the payload is the sender's id. */
  wake: 'subagentd_wake',
  /** `{"op":"cancel","id":...}`: the owner of the task stops it. */
  control: 'subagentd_control',
  /** Events were committed (see event-log.ts). */
  events: 'subagentd_events',
} as const;

/**
 * The next task to start across the cluster, fairly, claimed in one statement: from the tenant
 * with the fewest tasks running anywhere, then its user with the fewest, then the oldest (ids grow
 * with time). A tenant at its quota of running tasks waits. `queued` tasks and `running` ones
 * nobody owns (to be resumed) wait; none of those this instance is still stopping is taken. The
 * two first in line are looked at, the first taken if its tenant may start it. Answers the claimed
 * row with how many waited (at most 2) and whether the second could start too (whether another
 * could start, and whether any other waits at all); no row when none was claimed.
 */
const CLAIM = `WITH busy AS (
    SELECT tenant, user_id, count(*) AS n FROM tasks WHERE owner IS NOT NULL AND status = 'running' AND waiting_on_child = 0 GROUP BY tenant, user_id
  ), busy_tenants AS (SELECT tenant, sum(n) AS n FROM busy GROUP BY tenant),
  next AS (
    SELECT t.id, coalesce(g.n, 0) < ? AS may,
      row_number() OVER (ORDER BY coalesce(g.n, 0) < ? DESC, coalesce(g.n, 0), coalesce(b.n, 0), t.id) AS place
    FROM tasks t
      LEFT JOIN busy_tenants g ON g.tenant = t.tenant
      LEFT JOIN busy b ON b.tenant = t.tenant AND b.user_id = t.user_id
    WHERE t.owner IS NULL AND t.status IN ('queued', 'running') AND NOT (t.id = ANY(?))
    ORDER BY place
    LIMIT 2
  ),
  claimed AS (
    UPDATE tasks SET owner = ?, lease_until = ? FROM next
    WHERE tasks.id = next.id AND next.place = 1 AND next.may AND tasks.owner IS NULL
    RETURNING tasks.*
  )
  SELECT claimed.*, (SELECT count(*) FROM next) AS claim_waiting, coalesce((SELECT may FROM next WHERE place = 2), false) AS claim_second_may
  FROM claimed`;

/**
 * Task ownership on PostgreSQL, where several instances share the tasks. The `tasks` table is the
 * queue: a task is waiting while nobody owns it; an instance claims it (owner + lease), renews the
 * lease while it runs it, and whoever finds a lease expired takes the task over (resumes it or ends
 * it, as a restart would). No job-queue library carries this: see docs/reference.md.
 */
export function createClusterStore(sql: SqlClient, instanceId: string) {
  return {
    instanceId,

    /**
     * Claims the fairest waiting task for this instance (`maxPerTenant`: the tenants' running
     * quota), but none of `busy` (tasks this instance is still stopping). `last`: it was the only
     * one that could start, so a claim right after would find none (until something changes, which
     * wakes the instances: a task stored, released or ended). `alone`: no other task waited at all,
     * not even for its tenant's quota.
     */
    async claim(maxPerTenant: number, leaseUntil: number, busy: string[]): Promise<{ row: TaskRow; last: boolean; alone: boolean } | undefined> {
      // The claim's answer is read with its commit: one round trip (the claims of all instances
      // take turns under the lock).
      const quota = Math.min(maxPerTenant, 1e9);
      const answer = await sql.transaction(async (tx) => {
        tx.send('SELECT pg_advisory_xact_lock(?)', [CLAIM_LOCK]);
        return { rows: tx.defer(CLAIM, [quota, quota, busy, instanceId, leaseUntil]) };
      });
      const [raw] = await answer.rows;
      if (!raw) return undefined;
      const { claim_waiting: waiting, claim_second_may: secondMay, ...task } = raw;
      return { row: taskOf(task), last: !secondMay, alone: Number(waiting) === 1 };
    },

    /** A task of this instance waits for a child of its own (`on`), or no longer does: the tenant's quota does not count it meanwhile. */
    async lend(id: string, on: boolean): Promise<void> {
      await sql.run('UPDATE tasks SET waiting_on_child = ? WHERE id = ? AND owner = ?', [on ? 1 : 0, id, instanceId]);
    },

    /** Claims one waiting task by id (to cancel it); false when somebody owns it or it is not waiting. */
    async claimWaiting(id: string, leaseUntil: number): Promise<boolean> {
      const changed = await sql.run(`UPDATE tasks SET owner = ?, lease_until = ? WHERE id = ? AND ${WAITING_TASKS}`, [instanceId, leaseUntil, id]);
      return changed > 0;
    },

    /**
     * Renews the leases of the tasks this instance runs, storing what each is doing (`activity`,
     * JSON, for the other instances' answers); answers those of `mine` it no longer owns (another
     * instance took them over while this one could not renew, and may have ended them already).
     */
    async renew(mine: Array<{ id: string; activity: string | null }>, leaseUntil: number): Promise<string[]> {
      if (mine.length === 0) return [];
      const ids = mine.map((m) => m.id);
      // Only the tasks it runs: one it stopped without an end (taken over, as it thought) must
      // expire, so whoever finds it takes it over, rather than stay renewed and never run.
      await sql.run(`UPDATE tasks SET lease_until = ? WHERE owner = ? AND status = 'running' AND id = ANY(?)`, [leaseUntil, instanceId, ids]);
      await sql.run(
        `UPDATE tasks SET activity = a.activity FROM unnest(CAST(? AS TEXT[]), CAST(? AS TEXT[])) AS a(id, activity)
         WHERE tasks.id = a.id AND tasks.owner = ? AND tasks.status = 'running'`,
        [ids, mine.map((m) => m.activity), instanceId],
      );
      // Lost: owned by another instance or by none (released to be resumed), or already ended
      // there. A task claimed here and not yet marked started is still 'queued', and this one's.
      const lost = await sql.rows(`SELECT id FROM tasks WHERE id = ANY(?) AND NOT (status IN ('queued', 'running') AND owner IS NOT DISTINCT FROM ?)`, [
        ids,
        instanceId,
      ]);
      return lost.map((r) => r[0] as string);
    },

    /** Renews one task's lease if this instance still owns it; false when another took it over. */
    async renewOne(id: string, leaseUntil: number): Promise<boolean> {
      return (await sql.run(`UPDATE tasks SET lease_until = ? WHERE id = ? AND owner = ? AND status = 'running'`, [leaseUntil, id, instanceId])) > 0;
    },

    /**
     * Takes over the tasks whose lease expired before `now` (and, with `ownToo`, those a previous
     * process with this instance's id left), but none of `busy` (tasks this instance is still
     * stopping): they are this instance's until it released them for a resume or ended them.
     */
    async takeExpired(now: number, leaseUntil: number, ownToo: boolean, busy: string[]): Promise<TaskRow[]> {
      const rows = await sql.all(
        `UPDATE tasks SET owner = ?, lease_until = ? WHERE id IN (
           SELECT id FROM tasks WHERE status IN ('queued', 'running') AND owner IS NOT NULL
             AND (lease_until < ? OR (CAST(? AS INTEGER) = 1 AND owner = ?)) AND NOT (id = ANY(?)) ORDER BY id FOR UPDATE SKIP LOCKED)
         RETURNING *`,
        [instanceId, leaseUntil, now, ownToo ? 1 : 0, instanceId, busy],
      );
      return rows.map(taskOf).sort((a, b) => (a.id < b.id ? -1 : 1));
    },

    /**
     * Gives up a task this instance owns so any instance starts it: a running one is resumed after
     * a `restart` (counted as a resume); a queued one (null) simply waits again.
     */
    async release(id: string, reason: 'restart' | null): Promise<void> {
      await sql.run(
        `UPDATE tasks SET owner = NULL, lease_until = NULL, resume_reason = CAST(? AS TEXT),
           resumes = resumes + (CASE WHEN CAST(? AS TEXT) IS NULL THEN 0 ELSE 1 END) WHERE id = ? AND owner = ?`,
        [reason, reason, id, instanceId],
      );
    },

    /** Tasks waiting across the cluster, in all and of one tenant (the queue's bounds). */
    async waiting(tenant: string): Promise<{ all: number; tenant: number }> {
      const [all, mine] = (await sql.rows(`SELECT count(*), count(*) FILTER (WHERE tenant = ?) FROM tasks WHERE ${WAITING_TASKS}`, [tenant]))[0] as [
        number,
        number,
      ];
      return { all: Number(all), tenant: Number(mine) };
    },

    /** Tells every instance (this one too) on `channel`, now or when the caller's transaction commits. */
    async notify(channel: string, payload = '', tx: SqlClient = sql): Promise<void> {
      await tx.run('SELECT pg_notify(?, ?)', [channel, payload]);
    },
  };
}

export type ClusterStore = ReturnType<typeof createClusterStore>;
