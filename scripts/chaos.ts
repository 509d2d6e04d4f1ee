/**
 * `npm run chaos`: three instances on one PostgreSQL database under a steady load of model tasks,
 * with faults at random (an instance killed with SIGKILL and started again, an instance paused
 * with SIGSTOP past its lease and woken, the database restarted with a fast shutdown), then an
 * independent ledger read from the database, the scripted model's record of what it served and a
 * webhook receiver's record of what it got:
 *   - every task ended, once (one `task.finished`, the last of its events), its stream gap-free;
 *   - billed never exceeds served, and every served token is billed except calls served to an
 *     instance killed within LATE_KILL_MS (5 s) after, or while it died (their usage died with the
 *     process; an answer written as the kill closed its socket counts as served);
 *   - usage recorded after a task's end only for calls in flight at an instance paused past its
 *     lease (documented: the provider served them, and a lost lease reads an answer in flight to
 *     its end, for at most LOST_LEASE_READ_MS);
 *   - every `task.finished` delivered to the webhook receiver (at least once);
 *   - no instance exited but those the run killed;
 *   - no approved call ran twice (a tenth of the tasks ask before their command, and the run answers
 *     them from any instance): each approved command appends one line, at most one in the end;
 *   - every worktree apply all-or-nothing (a tenth of the tasks write 20 files in a worktree, and
 *     the run applies them from any instance while it kills them): in the end each task's files
 *     are in the shared workspace all or none, all once `appliedAt` is set;
 *   - nested children (a tenth of the tasks are leads that start a child) end and are billed like
 *     the rest;
 *   - tasks with candidates (a tenth: two attempts in worktrees, checked by a verify command) end
 *     with one attempt selected, and no attempt is started twice whatever kills them.
 * Prints the figures as one JSON object; exits 1 when the ledger does not hold.
 *
 * CHAOS_SECONDS (default 60): how long faults are injected while tasks are submitted.
 * CHAOS_SEED: the seed of the fault sequence (default: the time), printed for a rerun.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startScriptedModel } from '../scripted-model/server';
import { childEnv, startChildService, type ChildService } from '../test/support/child-service';
import { ensureDatabase, startTestPostgres } from '../test/support/postgres';
import { LOST_LEASE_READ_MS } from '../src/tasks/run/task-abort';

const SECONDS = Number(process.env.CHAOS_SECONDS ?? 60);
const SEED = Number(process.env.CHAOS_SEED ?? Date.now() % 1_000_000);
const LEASE_MS = 3000;
/**
 * A call served this soon before its instance was killed may be unbilled: its usage was in the
 * process only (written within milliseconds normally, held longer while the database restarts).
 */
const LATE_KILL_MS = 5000;
const NAMES = ['a', 'b', 'c'] as const;
/** What a worktree task writes: enough that a kill lands inside its apply now and then. */
const WORKTREE_FILES = 20;
type Kind = 'plain' | 'ask' | 'worktree' | 'lead' | 'candidates';
/** Five plain tasks in ten, two that ask, one in a worktree, one lead with a child, one with two candidates. */
const kindOf = (i: number): Kind => (['plain', 'plain', 'ask', 'plain', 'worktree', 'plain', 'candidates', 'ask', 'plain', 'lead'] as const)[i % 10];
/** The attempts of a task with candidates. */
const CANDIDATES = 2;
type Name = (typeof NAMES)[number];

/** mulberry32: a small seeded generator, so a run's fault sequence can be replayed. */
function random(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rnd = random(SEED);
const pick = <T>(list: readonly T[]) => list[Math.floor(rnd() * list.length)];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const started = Date.now();
  const cluster = await startTestPostgres();
  await ensureDatabase(cluster.url, 'chaos');
  const model = await startScriptedModel();
  const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-chaos-'));

  // What the webhook receiver got: webhook-id → times received.
  const received = new Map<string, number>();
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const id = String(req.headers['webhook-id'] ?? '');
      received.set(id, (received.get(id) ?? 0) + 1);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

  model.script('CHAOS-', (ctx) => {
    if (ctx.turn < 4) {
      const tool =
        ctx.turn % 2 === 0
          ? { name: 'write_file', args: { path: `chaos/${ctx.turn}-${Math.floor(Math.random() * 1e9)}.txt`, content: 'x' } }
          : { name: 'bash', args: { command: 'sleep 0.2; echo ok' } };
      return { toolCalls: [tool], usage: { input: 100 + ctx.turn, output: 10 }, delayMs: 50 + Math.floor(Math.random() * 300) };
    }
    return { toolCalls: [{ name: 'complete', args: { summary: 'done', paths: [] } }], usage: { input: 200, output: 20 } };
  });

  // The other kinds of task, by prompt (later scripts win over CHAOS-).
  const numberOf = (ctx: { messages: Array<{ role: string; content?: unknown }> }) =>
    /CHAOS-\w+-(\d+)/.exec(JSON.stringify(ctx.messages.find((m) => m.role === 'user')?.content))?.[1] ?? 'x';
  model.script('CHAOS-ASK-', (ctx) =>
    ctx.turn === 0
      ? {
          toolCalls: [{ name: 'bash', args: { command: `mkdir -p ran && echo ran >> ran/ask-${numberOf(ctx)}.txt && sleep 1` } }],
          usage: { input: 100, output: 10 },
        }
      : { toolCalls: [{ name: 'complete', args: { summary: 'asked', paths: [] } }], usage: { input: 200, output: 20 } },
  );
  model.script('CHAOS-WT-', (ctx) =>
    ctx.turn === 0
      ? {
          toolCalls: Array.from({ length: WORKTREE_FILES }, (_, k) => ({
            name: 'write_file',
            args: { path: `wt/f${k}.txt`, content: `${k}`.padEnd(64 * 1024, '.') },
          })),
          usage: { input: 100, output: 10 },
        }
      : { toolCalls: [{ name: 'complete', args: { summary: 'wrote', paths: [] } }], usage: { input: 200, output: 20 } },
  );
  model.script('CHAOS-LEAD-', (ctx) =>
    ctx.turn === 0
      ? {
          toolCalls: [{ name: 'task', args: { subagent_type: 'general', description: 'chaos child', prompt: `CHAOS-KID-${numberOf(ctx)}` } }],
          usage: { input: 100, output: 10 },
        }
      : { toolCalls: [{ name: 'complete', args: { summary: 'led', paths: [] } }], usage: { input: 200, output: 20 } },
  );

  model.script('CHAOS-CAND-', (ctx) =>
    ctx.turn === 0
      ? { toolCalls: [{ name: 'write_file', args: { path: 'cand.txt', content: ctx.model } }], usage: { input: 100, output: 10 } }
      : { toolCalls: [{ name: 'complete', args: { summary: 'attempted', paths: ['cand.txt'] } }], usage: { input: 200, output: 20 } },
  );

  const { DATABASE_PATH: _unused, ...shared } = childEnv(dir, model.url, 'unused');
  mkdirSync(shared.AGENTS_DIR, { recursive: true });
  writeFileSync(path.join(shared.AGENTS_DIR, 'lead.md'), '---\nname: lead\ndescription: Starts a child\nmaxDepth: 1\n---\nDelegate.\n');
  const envOf = (name: Name) => ({
    ...shared,
    OPENAI_API_KEY: `chaos-key-${name}`,
    DATABASE_URL: cluster.urlOf('chaos'),
    INSTANCE_ID: name,
    TASK_LEASE_MS: String(LEASE_MS),
    MAX_CONCURRENT_TASKS: '6',
    MAX_CONCURRENT_PER_TENANT: '100',
    MAX_QUEUED_TASKS: '10000',
    RATE_LIMIT_PER_MINUTE: '1000000',
    WEBHOOK_ALLOW_PRIVATE: 'true',
    WEBHOOK_RETRY_BASE_MS: '200',
    // A claim on a delivery outlasts three timeouts: short here, so a killed sender's claims expire soon.
    WEBHOOK_TIMEOUT_MS: '2000',
    LOG_LEVEL: process.env.CHAOS_LOG_LEVEL ?? 'warn',
  });
  const instances = new Map<Name, ChildService>();
  const unexpectedExits: string[] = [];
  const killedByUs = new Set<ChildService>();
  /** Every process the run started, killed ones too: their logs explain an error. */
  const processes: Array<{ name: Name; svc: ChildService }> = [];
  async function start(name: Name) {
    const svc = await startChildService(envOf(name));
    instances.set(name, svc);
    processes.push({ name, svc });
    void svc.exited.then(({ code, signal }) => {
      if (!killedByUs.has(svc)) unexpectedExits.push(`${name}: code ${code} signal ${signal}\n${svc.output().slice(-2000)}`);
    });
  }
  for (const name of NAMES) await start(name);

  const post = async (svc: ChildService, pathname: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${svc.url}${pathname}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(15_000),
    });
    return { status: res.status, body: (await res.json().catch(() => null)) as any };
  };
  await post(instances.get('a')!, '/webhooks', { url: hookUrl, events: ['task.finished'] });

  // Instances that answer now (not killed, not paused).
  const down = new Set<Name>();
  const faults: Array<{ kind: 'kill' | 'stop' | 'pg-restart'; name?: Name; at: number; until: number }> = [];
  const submitted = new Map<string, string>(); // task id → prompt
  let refused = 0;

  const kinds = new Map<string, Kind>(); // task id → its kind
  const workspaceOf = (i: number) => `T-chaos-${kindOf(i) === 'worktree' ? `wt-${i}` : i % 8}`;
  async function submit(i: number) {
    const kind = kindOf(i);
    const prompt = { plain: `CHAOS-${i}`, ask: `CHAOS-ASK-${i}`, worktree: `CHAOS-WT-${i}`, lead: `CHAOS-LEAD-${i}`, candidates: `CHAOS-CAND-${i}` }[kind];
    const options = {
      plain: undefined,
      ask: { permissions: { bash: 'ask' } },
      worktree: { isolation: 'worktree' },
      lead: undefined,
      candidates: { isolation: 'worktree', outcome: { verify: { command: 'test -f cand.txt' } }, candidates: { n: CANDIDATES } },
    }[kind];
    const key = `chaos-${SEED}-${i}`;
    for (let attempt = 0; attempt < 6; attempt++) {
      const live = NAMES.filter((n) => !down.has(n) && instances.has(n));
      if (live.length > 0) {
        try {
          const res = await post(
            instances.get(pick(live))!,
            '/tasks',
            {
              subagent_type: kind === 'lead' ? 'lead' : 'general',
              description: 'chaos',
              prompt,
              context: { parentTaskId: workspaceOf(i), userId: `u${i % 3}` },
              ...(options && { options }),
            },
            { 'idempotency-key': key },
          );
          if (res.status === 202 || res.status === 200) {
            submitted.set(res.body.id, prompt);
            kinds.set(res.body.id, kind);
            return;
          }
        } catch {
          // that instance died or paused under the request: another one
        }
      }
      await sleep(500);
    }
    refused++;
  }

  async function injectFaults(until: number) {
    // Each kind once in every three faults, in a random order: a short run still has all three.
    let round: Array<'kill' | 'stop' | 'pg-restart'> = [];
    while (Date.now() < until) {
      await sleep(3000 + rnd() * 3000);
      if (round.length === 0)
        round = (['kill', 'stop', 'pg-restart'] as const)
          .map((k) => ({ k, r: rnd() }))
          .sort((x, y) => x.r - y.r)
          .map((x) => x.k);
      const kind = round.shift()!;
      const at = Date.now();
      if (kind === 'pg-restart') {
        await cluster.pause();
        await cluster.start();
        faults.push({ kind, at, until: Date.now() });
        continue;
      }
      const name = pick(NAMES);
      const svc = instances.get(name)!;
      down.add(name);
      if (kind === 'kill') {
        killedByUs.add(svc);
        svc.child.kill('SIGKILL');
        await svc.exited;
        faults.push({ kind, name, at, until: Date.now() });
        await sleep(500 + rnd() * 1500);
        await start(name);
      } else {
        svc.child.kill('SIGSTOP');
        await sleep(LEASE_MS + 1500);
        svc.child.kill('SIGCONT');
        faults.push({ kind, name, at, until: Date.now() });
      }
      down.delete(name);
    }
  }

  /**
   * What a caller does meanwhile, from any live instance: allows every approval it finds, and
   * applies each finished worktree task (an apply cut by a kill is sent again, to another instance).
   */
  const applied = new Map<string, number>(); // task id → HTTP status of its last apply
  let operating = true;
  async function operate() {
    while (operating) {
      await sleep(300);
      const live = NAMES.filter((n) => !down.has(n) && instances.has(n));
      if (live.length === 0) continue;
      for (const [id, kind] of kinds) {
        if (!operating) break;
        if (kind !== 'ask' && kind !== 'worktree') continue;
        if (kind === 'worktree' && (applied.get(id) === 200 || applied.get(id) === 409)) continue;
        const svc = instances.get(pick(live))!;
        try {
          const task = (await (await fetch(`${svc.url}/tasks/${id}`, { signal: AbortSignal.timeout(5000) })).json()) as any;
          if (kind === 'ask' && task.status === 'paused' && task.pause?.reason === 'approval') {
            for (const p of task.pause.pending.filter((q: { answer: unknown }) => !q.answer)) {
              await post(svc, `/tasks/${id}/approvals/${p.requestId}`, { decision: 'allow' });
            }
          }
          if (kind === 'worktree' && task.status === 'completed') applied.set(id, (await post(svc, `/tasks/${id}/apply`, {})).status);
        } catch {
          // killed or paused under the request: the next round asks another instance
        }
      }
    }
  }
  const operator = operate();

  const until = Date.now() + SECONDS * 1000;
  const faulting = injectFaults(until);
  let i = 0;
  const submitting: Promise<void>[] = [];
  while (Date.now() < until) {
    submitting.push(submit(i++));
    await sleep(250);
  }
  await Promise.all(submitting);
  await faulting;

  // Every task ends (resumed elsewhere after a kill, or ended), read from the database itself.
  const db = new pg.Client({ connectionString: cluster.urlOf('chaos') });
  await db.connect();
  // The leads' children are tasks of the run too (their prompts are CHAOS-KID-<i>).
  const childrenOf = async () =>
    (await db.query(`SELECT id, parent_task FROM tasks WHERE parent_task = ANY($1)`, [[...submitted.keys()]])).rows as Array<{
      id: string;
      parent_task: string;
    }>;
  let ids: string[];
  const deadline = Date.now() + 180_000;
  for (;;) {
    ids = [...submitted.keys(), ...(await childrenOf()).map((c) => c.id)];
    const open = Number((await db.query(`SELECT count(*) AS n FROM tasks WHERE id = ANY($1) AND status IN ('queued', 'running', 'paused')`, [ids])).rows[0].n);
    const unapplied = [...kinds].filter(([id, kind]) => kind === 'worktree' && applied.get(id) !== 200 && applied.get(id) !== 409).length;
    if ((open === 0 && unapplied === 0) || Date.now() > deadline) break;
    await sleep(500);
  }
  operating = false;
  await operator;
  // A lead's child asks as CHAOS-KID-<i>; an attempt asks its task's own prompt.
  const attemptsOf = new Map<string, number>();
  for (const c of await childrenOf()) {
    const parent = submitted.get(c.parent_task) ?? '';
    if (kinds.get(c.parent_task) === 'candidates') attemptsOf.set(c.parent_task, (attemptsOf.get(c.parent_task) ?? 0) + 1);
    submitted.set(c.id, kinds.get(c.parent_task) === 'candidates' ? parent : `CHAOS-KID-${/CHAOS-LEAD-(\d+)/.exec(parent)?.[1]}`);
  }
  // Webhooks of the last ends go out (a delivery claimed by a killed instance waits for its claim to expire).
  const sent = Date.now() + 60_000;
  while (Date.now() < sent) {
    const pending = Number((await db.query(`SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'pending' AND task_id = ANY($1)`, [ids])).rows[0].n);
    if (pending === 0) break;
    await sleep(500);
  }

  // Writes an instance holds in memory (a paused one woken into a database it lost its connections
  // to bills its late call on the next try, a second later) land before the ledger is read: every
  // instance healthy with no write waiting, twice in a row.
  const settled = Date.now() + 30_000;
  for (let calm = 0; calm < 2 && Date.now() < settled;) {
    const answers = await Promise.all(
      [...instances.values()].map(async (svc) => {
        const health = await fetch(`${svc.url}/health`, { signal: AbortSignal.timeout(5000) }).catch(() => null);
        const metrics = await fetch(`${svc.url}/metrics`, { signal: AbortSignal.timeout(5000) }).then(
          (r) => r.text(),
          () => '',
        );
        return health?.status === 200 && /^subagentd_storage_waiting_writes 0$/m.test(metrics);
      }),
    );
    calm = answers.every(Boolean) ? calm + 1 : 0;
    await sleep(500);
  }

  const violations: string[] = [];
  // One snapshot for every read: a paused instance may still bill a late call while they run, and
  // its report row and the task's total (one transaction) must be seen together or not at all.
  await db.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
  const tasks = (
    await db.query(`SELECT id, status, error_code, resumes, input_tokens, completed_at, worktree, candidates FROM tasks WHERE id = ANY($1)`, [ids])
  ).rows;
  const events = (await db.query(`SELECT task_id, seq, type FROM task_events WHERE task_id = ANY($1) ORDER BY task_id, seq`, [ids])).rows;
  const reports = (await db.query(`SELECT task_id, input_tokens, at FROM usage_reports WHERE task_id = ANY($1)`, [ids])).rows;
  const deliveries = (await db.query(`SELECT id, task_id, status FROM webhook_deliveries WHERE event = 'task.finished' AND task_id = ANY($1)`, [ids])).rows;
  await db.query('COMMIT');
  await db.end();

  const eventsOf = new Map<string, Array<{ seq: number; type: string }>>();
  for (const e of events) eventsOf.set(e.task_id, [...(eventsOf.get(e.task_id) ?? []), { seq: Number(e.seq), type: e.type }]);
  const statuses: Record<string, number> = {};
  let unbilledTokens = 0;
  let lateRows = 0;
  let resumes = 0;
  for (const t of tasks) {
    statuses[`${t.status}${t.error_code ? `/${t.error_code}` : ''}`] = (statuses[`${t.status}${t.error_code ? `/${t.error_code}` : ''}`] ?? 0) + 1;
    resumes += Number(t.resumes);
    if (t.status === 'queued' || t.status === 'running') violations.push(`${t.id} never ended (${t.status})`);
    const evs = eventsOf.get(t.id) ?? [];
    if (evs.some((e, k) => e.seq !== k + 1)) violations.push(`${t.id}: its stream has a gap (${evs.map((e) => e.seq).join(',')})`);
    const finished = evs.filter((e) => e.type === 'task.finished');
    if (t.status !== 'queued' && t.status !== 'running' && (finished.length !== 1 || evs.at(-1)?.type !== 'task.finished')) {
      violations.push(`${t.id}: ${finished.length} task.finished events, last event ${evs.at(-1)?.type}`);
    }
    // Billing against what the provider served for this task's prompt. Tasks that share a prompt
    // (a lead resumed past its `task` call asks its model again, and the new call starts a second
    // child: CHAOS-KID-<i> twice) are held to what was served for all of them.
    const prompt = submitted.get(t.id)!;
    const served = model.served.filter((s) => s.prompt === prompt);
    const servedTokens = served.reduce((sum, s) => sum + s.inputTokens, 0);
    const own = reports.filter((r) => r.task_id === t.id).reduce((sum, r) => sum + Number(r.input_tokens), 0);
    if (own !== Number(t.input_tokens)) violations.push(`${t.id}: its usage rows (${own}) and its total (${t.input_tokens}) differ`);
    const sharing = tasks.filter((u) => submitted.get(u.id) === prompt);
    // Checked once, with the first of them.
    if (sharing[0].id === t.id) {
      const billed = reports.filter((r) => sharing.some((u) => u.id === r.task_id)).reduce((sum, r) => sum + Number(r.input_tokens), 0);
      if (billed > servedTokens) violations.push(`${t.id}: billed ${billed} tokens, served ${servedTokens} (billed twice)`);
      const killedSoonAfter = served.filter((s) =>
        faults.some((f) => f.kind === 'kill' && s.authorization === `Bearer chaos-key-${f.name}` && s.at <= f.until + 50 && f.at - s.at <= LATE_KILL_MS),
      );
      const excusable = killedSoonAfter.reduce((sum, s) => sum + s.inputTokens, 0);
      if (servedTokens - billed > excusable)
        violations.push(
          `${t.id}: ${servedTokens - billed} served tokens unbilled, ${excusable} excusable by a kill (${prompt}, ${t.status}${t.error_code ? `/${t.error_code}` : ''})`,
        );
      unbilledTokens += Math.max(0, servedTokens - billed);
    }
    // Usage after the end: only a call in flight at an instance paused past its lease.
    const late = reports.filter((r) => r.task_id === t.id && t.completed_at !== null && Number(r.at) > Number(t.completed_at));
    lateRows += late.length;
    if (late.length > 0) {
      const pausedCall = served.some((s) =>
        faults.some(
          (f) =>
            f.kind === 'stop' && s.authorization === `Bearer chaos-key-${f.name}` && s.at >= f.at - LEASE_MS && s.at <= f.until + LEASE_MS + LOST_LEASE_READ_MS,
        ),
      );
      if (!pausedCall) violations.push(`${t.id}: ${late.length} usage rows after its end, no call of a paused instance to explain them`);
    }
    if (t.status !== 'queued' && t.status !== 'running') {
      const hook = deliveries.filter((d) => d.task_id === t.id);
      if (hook.length !== 1) violations.push(`${t.id}: ${hook.length} task.finished deliveries`);
      else if (!received.has(hook[0].id)) violations.push(`${t.id}: delivery ${hook[0].id} (${hook[0].status}) never reached the receiver`);
    }
  }
  if (unexpectedExits.length > 0) violations.push(...unexpectedExits.map((e) => `an instance exited on its own: ${e}`));

  // No approved call ran twice: each approved command appends one line.
  const ledger = { approvedCalls: 0, approvedRanTwice: 0, applies: 0, appliesWhole: 0, candidatesSelected: 0, attemptsStartedTwice: 0 };
  const workspaces = shared.WORKSPACES_DIR;
  for (const [id, kind] of kinds) {
    const i = /(\d+)$/.exec(submitted.get(id)!)![1];
    if (kind === 'ask') {
      const file = path.join(workspaces, workspaceOf(Number(i)), 'ran', `ask-${i}.txt`);
      const runs = existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).length : 0;
      ledger.approvedCalls += runs > 0 ? 1 : 0;
      if (runs > 1) {
        ledger.approvedRanTwice++;
        violations.push(`${id}: its approved command ran ${runs} times`);
      }
    }
    if (kind === 'candidates') {
      // Its attempts, started once each; completed, it kept one of them.
      const row = tasks.find((t) => t.id === id);
      const list = (row?.candidates ? (typeof row.candidates === 'string' ? JSON.parse(row.candidates) : row.candidates) : []) as Array<{ selected: boolean }>;
      const attempts = attemptsOf.get(id) ?? 0;
      if (attempts > CANDIDATES) {
        ledger.attemptsStartedTwice += attempts - CANDIDATES;
        violations.push(`${id}: ${attempts} attempts started, ${CANDIDATES} asked for`);
      }
      if (row?.status === 'completed') {
        if (list.filter((c) => c.selected).length === 1) ledger.candidatesSelected++;
        else violations.push(`${id}: completed with ${list.filter((c) => c.selected).length} attempts selected`);
      }
    }
    if (kind === 'worktree') {
      // All or nothing: the task's 20 files with its content, or none of them.
      const folder = path.join(workspaces, workspaceOf(Number(i)), 'wt');
      const present = Array.from({ length: WORKTREE_FILES }, (_, k) => path.join(folder, `f${k}.txt`)).filter(
        (f, k) => existsSync(f) && readFileSync(f, 'utf8') === `${k}`.padEnd(64 * 1024, '.'),
      ).length;
      const row = tasks.find((t) => t.id === id);
      const appliedAt = row?.worktree ? (JSON.parse(typeof row.worktree === 'string' ? row.worktree : JSON.stringify(row.worktree)).appliedAt ?? null) : null;
      ledger.applies += appliedAt ? 1 : 0;
      if (present === WORKTREE_FILES || present === 0) ledger.appliesWhole++;
      if (present !== 0 && present !== WORKTREE_FILES) violations.push(`${id}: ${present} of ${WORKTREE_FILES} files applied`);
      else if (appliedAt && present === 0) violations.push(`${id}: appliedAt set, no file applied`);
    }
  }

  const figures = {
    seed: SEED,
    seconds: SECONDS,
    wallSeconds: Math.round((Date.now() - started) / 1000),
    tasks: { submitted: submitted.size, refusedAfterRetries: refused, ...statuses },
    faults: {
      kill: faults.filter((f) => f.kind === 'kill').length,
      stop: faults.filter((f) => f.kind === 'stop').length,
      pgRestart: faults.filter((f) => f.kind === 'pg-restart').length,
    },
    resumes,
    servedCalls: model.served.filter((s) => s.prompt.startsWith('CHAOS-')).length,
    unbilledTokensWithinKillWindow: unbilledTokens,
    usageRowsAfterEnd: lateRows,
    webhooks: { deliveries: deliveries.length, receivedIds: received.size, duplicates: [...received.values()].reduce((n, c) => n + c - 1, 0) },
    kinds: Object.fromEntries((['plain', 'ask', 'worktree', 'lead', 'candidates'] as const).map((k) => [k, [...kinds.values()].filter((v) => v === k).length])),
    children: tasks.length - kinds.size,
    // Children started again by a lead resumed past its `task` call (a new call id, a new child).
    // (A task with candidates and its attempts share a prompt: they are counted in the ledger instead.)
    childrenStartedTwice: (() => {
      const others = tasks.filter((t) => !submitted.get(t.id)!.startsWith('CHAOS-CAND-')).map((t) => submitted.get(t.id));
      return others.length - new Set(others).size;
    })(),
    ledger,
    violations: violations.length,
  };
  console.log(JSON.stringify(figures, null, 2));
  for (const v of violations.slice(0, 30)) console.error(`VIOLATION ${v}`);
  // What a rerun cannot replay (the faults land at other moments): the timeline of the first
  // tasks in violation, as the model served them and the instances logged them.
  if (violations.length > 0) {
    const rel = (at: number) => `+${at - started} ms`;
    console.error(`faults: ${faults.map((f) => `${f.kind}${f.name ? ` ${f.name}` : ''} ${rel(f.at)}..${rel(f.until)}`).join(', ')}`);
    const ids = [...new Set(violations.map((v) => /^(tsk_\w+)/.exec(v)?.[1]).filter((id): id is string => Boolean(id)))].slice(0, 3);
    for (const id of ids) {
      const served = model.served.filter((s) => s.prompt === submitted.get(id));
      console.error(`${id} served: ${served.map((s) => `turn ${s.turn} to ${s.authorization?.slice(-1)} ${rel(s.at)}`).join(', ')}`);
      for (const { name, svc } of processes) {
        const lines = svc.output().split('\n');
        for (const line of lines.filter((l) => l.includes(id)).slice(-10)) console.error(`${id} ${name}: ${line.slice(0, 600)}`);
      }
    }
  }
  // Why tasks ended in error, as the instances logged it (those still running at the end).
  const failures = processes.flatMap(({ name, svc }) =>
    svc
      .output()
      .split('\n')
      .filter((l) => l.includes('"task failed"') || l.includes('"runner failed"'))
      .map((l) => `${name}: ${l}`),
  );
  for (const line of failures.slice(0, 10)) console.error(`task error: ${line.slice(0, 1500)}`);
  if (process.env.CHAOS_LOGS) {
    const { mkdirSync, writeFileSync } = await import('node:fs');
    mkdirSync(process.env.CHAOS_LOGS, { recursive: true });
    processes.forEach(({ name, svc }, k) => writeFileSync(path.join(process.env.CHAOS_LOGS!, `${k}-${name}.log`), svc.output()));
    writeFileSync(path.join(process.env.CHAOS_LOGS, 'faults.json'), JSON.stringify(faults, null, 2));
  }

  for (const svc of instances.values()) {
    killedByUs.add(svc);
    svc.child.kill('SIGCONT');
    svc.child.kill('SIGKILL');
  }
  await Promise.all([...instances.values()].map((s) => s.exited));
  await model.close();
  receiver.close();
  await cluster.stop();
  rmSync(dir, { recursive: true, force: true });
  process.exit(violations.length > 0 ? 1 : 0);
}

main().catch((err) => {
  console.error(err);
  process.exit(2);
});
