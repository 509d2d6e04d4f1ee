import { useEffect, useState } from 'preact/hooks';
import { Pager } from './pager.tsx';
import { api, ApiError } from './api.ts';
import { age, money, tokens } from './format.ts';

interface Variant {
  model?: string;
  subagent_type?: string;
}
interface Compared {
  original: number;
  replay: number;
}
interface Row {
  taskId: string;
  variant: Variant;
  replayTaskId: string | null;
  status: string;
  replay: {
    divergedAtStep: number | null;
    comparison: {
      steps: Compared;
      inputTokens: Compared;
      outputTokens: Compared;
      costMicroUsd: Compared;
      sameSummary: boolean;
      artifacts: { same: string[]; changed: string[]; missing: string[] };
    } | null;
  } | null;
  error: { code: string; message: string } | null;
}
interface Batch {
  id: string;
  status: 'running' | 'completed';
  createdAt: string;
  rows: Row[];
}
interface Listed {
  id: string;
  createdAt: string;
  variants: Variant[];
  replays: number;
}

/** How often a batch with replays still running is read again. */
const REFRESH_MS = 2000;

const variantName = (v: Variant) => [v.model, v.subagent_type].filter(Boolean).join(' · ') || "the original's";
const errorText = (err: unknown) => (err instanceof ApiError ? err.message : String(err));
const link = (id: string) => <a href={`#/tasks/${encodeURIComponent(id)}`}>{id}</a>;

/** `a → b`, the replay's figure marked when it differs from the original's. */
function Pair({ pair, show }: { pair: Compared; show: (n: number) => string }) {
  return (
    <>
      {show(pair.original)} → <span class={pair.replay === pair.original ? undefined : 'changed'}>{show(pair.replay)}</span>
    </>
  );
}

/** One batch (`GET /replays/{id}`): a row per task and variant with its comparison, read again while one runs. */
function BatchTable({ id }: { id: string }) {
  const [batch, setBatch] = useState<Batch | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let stop = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const load = async () => {
      try {
        const next = await api<Batch>(`/replays/${encodeURIComponent(id)}`);
        if (stop) return;
        setBatch(next);
        setError(null);
        if (next.status === 'running') timer = setTimeout(() => void load(), REFRESH_MS);
      } catch (err) {
        if (!stop) setError(errorText(err));
      }
    };
    void load();
    return () => {
      stop = true;
      clearTimeout(timer);
    };
  }, [id]);
  if (error) return <p class="error">{error}</p>;
  if (!batch) return <p class="hint">Loading…</p>;
  return (
    <section data-batch={batch.id}>
      <h2>
        Replays {batch.id} <span class={`status ${batch.status}`}>{batch.status}</span>
      </h2>
      <p class="hint">
        Started {age(batch.createdAt)}. Each row: the task replayed, the variant it ran on, and the replay against the original (original → replay).
      </p>
      <table class="replays">
        <thead>
          <tr>
            <th>Task</th>
            <th>Variant</th>
            <th>Replay</th>
            <th>Status</th>
            <th class="num">Diverged at step</th>
            <th class="num">Steps</th>
            <th class="num">Tokens in</th>
            <th class="num">Tokens out</th>
            <th class="num">Cost</th>
            <th>Same summary</th>
            <th>Artifacts (same / changed / missing)</th>
          </tr>
        </thead>
        <tbody>
          {batch.rows.map((r) => {
            const c = r.replay?.comparison;
            return (
              <tr key={`${r.taskId}:${variantName(r.variant)}`} data-replay={r.replayTaskId ?? ''}>
                <td>{link(r.taskId)}</td>
                <td>{variantName(r.variant)}</td>
                <td>{r.replayTaskId ? link(r.replayTaskId) : <span class="hint">{r.error?.message ?? 'not started'}</span>}</td>
                <td>
                  <span class={`status ${r.status}`}>{r.status}</span>
                </td>
                <td class="num">{r.replay ? (r.replay.divergedAtStep ?? 'never') : '—'}</td>
                <td class="num">{c ? <Pair pair={c.steps} show={String} /> : '—'}</td>
                <td class="num">{c ? <Pair pair={c.inputTokens} show={tokens} /> : '—'}</td>
                <td class="num">{c ? <Pair pair={c.outputTokens} show={tokens} /> : '—'}</td>
                <td class="num">{c ? <Pair pair={c.costMicroUsd} show={money} /> : '—'}</td>
                <td>{c ? (c.sameSummary ? 'yes' : 'no') : '—'}</td>
                <td>{c ? `${c.artifacts.same.length} / ${c.artifacts.changed.length} / ${c.artifacts.missing.length}` : '—'}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </section>
  );
}

/** The tenant's batches of replays (`GET /replays`), newest first, each opening its table. */
function BatchList() {
  const [cursors, setCursors] = useState<string[]>([]);
  const [page, setPage] = useState<{ batches: Listed[]; nextCursor: string | null } | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    const cursor = cursors.at(-1);
    api<{ batches: Listed[]; nextCursor: string | null }>(`/replays?limit=50${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
      .then((next) => (setPage(next), setError(null)))
      .catch((err: unknown) => setError(errorText(err)));
  }, [cursors]);
  return (
    <section>
      <h2>Replays</h2>
      <p class="hint">
        Batches started with <code>POST /replays</code>: each runs finished tasks again on other models or definitions.
      </p>
      {error && <p class="error">{error}</p>}
      <table class="replay-batches">
        <thead>
          <tr>
            <th>Batch</th>
            <th>Variants</th>
            <th class="num">Replays</th>
            <th>Started</th>
          </tr>
        </thead>
        <tbody>
          {(page?.batches ?? []).map((b) => (
            <tr key={b.id} data-batch={b.id}>
              <td>
                <a href={`#/replays/${encodeURIComponent(b.id)}`}>{b.id}</a>
              </td>
              <td>{b.variants.map(variantName).join(', ')}</td>
              <td class="num">{b.replays}</td>
              <td>{age(b.createdAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {page && page.batches.length === 0 && <p class="hint">No batch of replays yet.</p>}
      <Pager cursors={cursors} setCursors={setCursors} next={page?.nextCursor} />
    </section>
  );
}

/** `#/replays`: the batches; `#/replays/<id>`: one batch's table. */
export function ReplaysPage({ id }: { id?: string }) {
  return id ? <BatchTable id={id} /> : <BatchList />;
}
