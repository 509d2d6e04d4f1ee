import { useEffect, useRef, useState } from 'preact/hooks';
import { Pager } from './pager.tsx';
import { api, ApiError, follow } from './api.ts';
import { age, money, tokens } from './format.ts';
import { treeOf } from './tree.ts';

export interface Task {
  id: string;
  status: string;
  subagent_type: string;
  description: string;
  context: { parentTaskId: string; userId: string };
  steps: number;
  usage: { totalTokens: number; costMicroUsd?: number | null };
  createdAt: string;
  summary: string | null;
  error: { code: string; message: string } | null;
  [field: string]: any;
}

const STATUSES = ['', 'queued', 'running', 'paused', 'completed', 'aborted', 'error'];
const PAGE = 50;
/** How often the list is read again while it is on screen, when no stream can say it changed. */
const REFRESH_MS = 2000;
/** While a parent's stream is followed, a slow read also catches what a dropped stream missed. */
const FALLBACK_MS = 30_000;

/**
 * The tasks of the key's tenant, newest first (a lead's children under it, as a tree), filtered and paged. Filtered by a parent task, the
 * list follows that parent's event stream and is read again when one of its tasks changes (a new
 * row shows at once); the service has no tenant-wide stream, so unfiltered it is read every 2 s.
 */
export function TasksPage() {
  const [filters, setFilters] = useState({ status: '', parentTaskId: '', userId: '' });
  // What is typed, apart from the filters applied: the list's reads re-render the page every 2 s,
  // and a controlled input showing the applied filter would lose what is half typed at each.
  const [draft, setDraft] = useState(filters);
  const [cursors, setCursors] = useState<string[]>([]);
  const [page, setPage] = useState<{ tasks: Task[]; nextCursor: string | null } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [now, setNow] = useState(Date.now());

  const query = () => {
    const q = new URLSearchParams({ limit: String(PAGE) });
    for (const [k, v] of Object.entries(filters)) if (v) q.set(k, v);
    const cursor = cursors.at(-1);
    if (cursor) q.set('cursor', cursor);
    return `/tasks?${q}`;
  };
  useEffect(() => {
    let stop = false;
    const load = async () => {
      try {
        const next = await api<{ tasks: Task[]; nextCursor: string | null }>(query());
        if (!stop) {
          setPage(next);
          setNow(Date.now());
          setError(null);
        }
      } catch (err) {
        if (!stop) setError(err instanceof ApiError ? err.message : String(err));
      }
    };
    // One read at a time; a change that arrives during a read asks for one more after it.
    let reading: Promise<void> | null = null;
    let again = false;
    const reload = () => {
      if (reading) {
        again = true;
        return;
      }
      reading = load().finally(() => {
        reading = null;
        if (again && !stop) {
          again = false;
          reload();
        }
      });
    };
    const abort = new AbortController();
    const parent = filters.parentTaskId;
    if (parent) {
      // No cursor at first (its unfinished tasks' events, then live ones), then from the last event
      // seen; each (re)connection reads the list once for what happened while it was away.
      void follow(`/events?parentTaskId=${encodeURIComponent(parent)}`, null, reload, abort.signal, {
        cursor: 'parentSeq',
        onConnect: reload,
      }).catch((err: unknown) => !stop && setError(err instanceof ApiError ? err.message : String(err)));
    } else reload();
    const timer = setInterval(reload, parent ? FALLBACK_MS : REFRESH_MS);
    return () => {
      stop = true;
      abort.abort();
      clearInterval(timer);
    };
  }, [filters, cursors]);

  /** Applies the filters typed (Enter, or leaving the field), when they differ from those shown. */
  const apply = (next: typeof filters) => {
    const trimmed = { status: next.status, parentTaskId: next.parentTaskId.trim(), userId: next.userId.trim() };
    if (trimmed.status === filters.status && trimmed.parentTaskId === filters.parentTaskId && trimmed.userId === filters.userId) return;
    setFilters(trimmed);
    setCursors([]);
  };
  /** The form's fields as they are now (not as the last render saw them). */
  const form = useRef<HTMLFormElement>(null);
  const typed = () => {
    const field = (name: string) => (form.current?.elements.namedItem(name) as HTMLInputElement | HTMLSelectElement | null)?.value ?? '';
    return { status: field('status'), parentTaskId: field('parentTaskId'), userId: field('userId') };
  };
  const commit = () => {
    const next = typed();
    setDraft(next);
    apply(next);
  };
  return (
    <section>
      <h2>Tasks</h2>
      <form
        ref={form}
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          commit();
        }}
      >
        <label>
          Status
          <select name="status" value={draft.status} onChange={commit}>
            {STATUSES.map((s) => (
              <option value={s}>{s || 'any'}</option>
            ))}
          </select>
        </label>
        <label>
          Parent task
          <input name="parentTaskId" value={draft.parentTaskId} onInput={() => setDraft(typed())} onChange={commit} placeholder="T-123" />
        </label>
        <label>
          User
          <input name="userId" value={draft.userId} onInput={() => setDraft(typed())} onChange={commit} placeholder="u-42" />
        </label>
      </form>
      {error && <p class="error">{error}</p>}
      <table class="tasks">
        <thead>
          <tr>
            <th>Status</th>
            <th>Type</th>
            <th>Description</th>
            <th>Parent</th>
            <th>User</th>
            <th class="num">Steps</th>
            <th class="num">Tokens</th>
            <th class="num">Cost</th>
            <th>Age</th>
          </tr>
        </thead>
        <tbody>
          {treeOf(page?.tasks ?? []).map(({ task: t, depth }) => (
            <tr key={t.id} data-task={t.id} data-depth={depth}>
              <td>
                <span class={`status ${t.status}`}>{t.status}</span>
              </td>
              <td>{t.subagent_type}</td>
              <td class={depth > 0 ? `nested depth-${Math.min(depth, 5)}` : undefined}>
                {depth > 0 && <span class="branch">└ </span>}
                <a href={`#/tasks/${encodeURIComponent(t.id)}`}>{t.description || t.id}</a>
                {t.background && <span class="tag">background</span>}
              </td>
              <td>{t.context.parentTaskId}</td>
              <td>{t.context.userId}</td>
              <td class="num">{t.steps}</td>
              <td class="num">{tokens(t.usage.totalTokens)}</td>
              <td class="num">{money(t.usage.costMicroUsd)}</td>
              <td>{age(t.createdAt, now)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {page && page.tasks.length === 0 && <p class="hint">No task matches.</p>}
      <Pager cursors={cursors} setCursors={setCursors} next={page?.nextCursor} />
    </section>
  );
}
