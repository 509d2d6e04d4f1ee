import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, ApiError, download, follow, text } from './api.ts';
import { age, duration, money, pretty, tokens } from './format.ts';
import type { Task } from './tasks-page.tsx';
import { createTimeline, hookSays, type Item } from './timeline.ts';
import { descendantsOf } from './tree.ts';
import { CandidatesView, OutcomeView } from './outcome-view.tsx';

const FINISHED = new Set(['completed', 'aborted', 'error']);
/** Items drawn at first: the latest ones (a task of 5,000 events stays quick); the rest on demand. */
const SHOWN = 300;

/** What the task is doing now, in words: "running `bash` for 42 s, last output 3 s ago". */
function liveness(task: Task, now: number): string {
  const p = task.progress;
  if (!p) return task.status;
  const since = duration(now - Date.parse(p.phaseSince));
  const heard = duration(now - Date.parse(p.lastActivityAt));
  if (p.reason === 'approval' || p.reason === 'tool') return `waiting for the caller (${p.reason}) for ${since}`;
  if (p.phase === 'paused') return `paused (${task.pause?.reason ?? p.reason ?? 'paused'}) for ${since}`;
  if (p.phase === 'queued') return `queued for ${since}`;
  if (p.phase === 'tool') return `step ${p.step}: running ${p.tool} for ${since}, last output ${heard} ago`;
  return `step ${p.step}: waiting for the model for ${since}, last token ${heard} ago`;
}

function ItemView({ item }: { item: Item }) {
  switch (item.kind) {
    case 'step':
      return (
        <h4 class="step">
          Step {item.step}
          {item.usage && (
            <span class="hint">
              {' '}
              · {tokens(item.usage.totalTokens)} tokens · {money(item.usage.costMicroUsd)} · {item.finishReason}
            </span>
          )}
        </h4>
      );
    case 'text':
      return <p class="text">{item.text}</p>;
    case 'tool':
      return (
        <details class={`tool${item.isError ? ' failed' : ''}`}>
          <summary>
            <code>{item.toolName}</code>{' '}
            {item.output !== undefined
              ? item.isError
                ? 'failed'
                : 'done'
              : item.waiting === 'approval'
                ? '…awaiting approval'
                : item.waiting === 'caller'
                  ? "…awaiting the caller's result"
                  : '…running'}
            {item.hooks
              ?.filter((h) => h.decision !== 'none')
              .map((h) => (
                <span class={`hook ${h.decision}`}>
                  {' '}
                  · {h.event}: {h.decision}
                </span>
              ))}
          </summary>
          {item.hooks && (
            <>
              <h5>Hooks</h5>
              <ul class="hooks">
                {item.hooks.map((h) => (
                  <li class={h.decision}>{hookSays(h)}</li>
                ))}
              </ul>
            </>
          )}
          <h5>Input</h5>
          <pre>{pretty(item.input)}</pre>
          {item.output !== undefined && (
            <>
              <h5>Output</h5>
              <pre>{pretty(item.output)}</pre>
            </>
          )}
        </details>
      );
    case 'plan':
      return (
        <ol class="plan">
          {item.entries.map((e) => (
            <li class={e.status}>
              {e.content} <span class="hint">({e.status})</span>
            </li>
          ))}
        </ol>
      );
    case 'note':
      return <p class={`note ${item.type.replace('.', '-')}`}>{item.text}</p>;
  }
}

/** One task: its live story, what it waits for (with the buttons to answer), steering, cancel, transcript, artifacts. */
export function TaskPage({ id }: { id: string }) {
  const [task, setTask] = useState<Task | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [version, setVersion] = useState(0);
  const [showAll, setShowAll] = useState(false);
  const [steer, setSteer] = useState('');
  const [transcript, setTranscript] = useState<unknown[] | null>(null);
  const [diff, setDiff] = useState<string | null>(null);
  // What the run started with (its `task.started` event): its preloaded skills and memory folder.
  const [started, setStarted] = useState<{ skills?: string[]; memory?: { scope: string; key: string; type: string; url: string } } | null>(null);
  const [now, setNow] = useState(Date.now());
  /** The tasks of its workspace, for the tree of the children it started (nesting). */
  const [family, setFamily] = useState<Task[]>([]);
  const timeline = useMemo(() => createTimeline(), [id]);
  const frame = useRef(0);
  const familySettled = useRef(false);

  const report = (err: unknown) => setError(err instanceof ApiError ? `${err.code}: ${err.message}` : String(err));
  const reload = () =>
    api<Task>(`/tasks/${encodeURIComponent(id)}`)
      .then(async (t) => {
        setTask(t);
        setNow(Date.now());
        // The children it started, read again until it and they have all ended.
        if (!familySettled.current) {
          const q = new URLSearchParams({ parentTaskId: t.context.parentTaskId, limit: '200' });
          const tasks = (await api<{ tasks: Task[] }>(`/tasks?${q}`)).tasks;
          setFamily(tasks);
          familySettled.current = FINISHED.has(t.status) && descendantsOf(t.id, tasks).every((n) => FINISHED.has(n.task.status));
        }
      })
      .catch(report);

  useEffect(() => {
    const stop = new AbortController();
    familySettled.current = false;
    setFamily([]);
    void reload();
    // Events drawn once per frame, however many arrive in it.
    const onMessage = (m: Parameters<typeof timeline.add>[0]) => {
      timeline.add(m);
      if (m.type === 'task.finished') setTask(m.data);
      if (m.type === 'task.started') setStarted(m.data);
      if (!frame.current) frame.current = requestAnimationFrame(() => ((frame.current = 0), setVersion((v) => v + 1)));
    };
    follow(`/tasks/${encodeURIComponent(id)}/events`, 0, onMessage, stop.signal).catch(report);
    const timer = setInterval(() => void reload(), 2000);
    return () => {
      stop.abort();
      clearInterval(timer);
    };
  }, [id]);

  if (!task) return <section>{error ? <p class="error">{error}</p> : <p class="hint">Loading…</p>}</section>;
  const finished = FINISHED.has(task.status);
  const pending: any[] = (task.progress?.pending ?? task.pause?.pending ?? []).filter((p: any) => !p.answer);
  const post = (path: string, body: unknown = {}) =>
    api(`/tasks/${encodeURIComponent(id)}${path}`, { method: 'POST', body })
      .then(() => reload())
      .catch(report);
  const items = timeline.items;
  const shown = showAll ? items : items.slice(-SHOWN);
  const subagents = descendantsOf(task.id, family);

  return (
    <section class="task" data-version={version}>
      <p>
        <a href="#/tasks">← Tasks</a>
      </p>
      <h2>
        {task.description || task.id} <span class={`status ${task.status}`}>{task.status}</span>
      </h2>
      <dl class="facts">
        <dt>Id</dt>
        <dd>{task.id}</dd>
        <dt>Type</dt>
        <dd>{task.subagent_type}</dd>
        <dt>Parent · user</dt>
        <dd>
          {task.context.parentTaskId} · {task.context.userId}
        </dd>
        <dt>Created</dt>
        <dd>{age(task.createdAt, now)}</dd>
        <dt>Steps · tokens · cost</dt>
        <dd>
          {task.steps} · {tokens(task.usage.totalTokens)} · {money(task.usage.costMicroUsd)}
        </dd>
        <dt>Now</dt>
        <dd class="liveness">{finished ? task.status : liveness(task, now)}</dd>
        {started?.skills && (
          <>
            <dt>Skills</dt>
            <dd class="skills">{started.skills.join(', ')}</dd>
          </>
        )}
        {started?.memory && (
          <>
            <dt>Memory</dt>
            <dd class="memory">
              {started.memory.scope === 'definition' ? `${started.memory.type}'s own` : `per ${started.memory.scope}: ${started.memory.key}`} ·{' '}
              <a
                href="#"
                onClick={(e) => {
                  e.preventDefault();
                  void download(`${started.memory!.url}MEMORY.md`, 'MEMORY.md').catch(report);
                }}
              >
                MEMORY.md
              </a>
            </dd>
          </>
        )}
      </dl>
      {error && <p class="error">{error}</p>}
      {task.error && (
        <p class="error">
          {task.error.code}: {task.error.message}
        </p>
      )}
      {task.summary && <p class="summary">{task.summary}</p>}
      {task.outcome && <OutcomeView outcome={task.outcome} />}
      {task.candidates && <CandidatesView candidates={task.candidates} />}

      {pending.length > 0 && (
        <div class="pending">
          <h3>Waiting for you</h3>
          {pending.map((p) => (
            <div class="request" data-request={p.requestId}>
              <p>
                <code>{p.toolName}</code> {p.kind === 'tool' ? 'is a tool your backend runs' : 'asks for approval'}
              </p>
              <pre>{pretty(p.input, 4000)}</pre>
              {p.kind !== 'tool' && (
                <>
                  <button class="allow" onClick={() => void post(`/approvals/${p.requestId}`, { decision: 'allow' })}>
                    Allow
                  </button>
                  <button class="deny" onClick={() => void post(`/approvals/${p.requestId}`, { decision: 'deny' })}>
                    Deny
                  </button>
                </>
              )}
            </div>
          ))}
        </div>
      )}

      {!finished && (
        <div class="actions">
          <form
            onSubmit={(e) => {
              e.preventDefault();
              if (steer.trim()) void post('/messages', { prompt: steer.trim() }).then(() => setSteer(''));
            }}
          >
            <input name="steer" placeholder="A message for the subagent before its next step" value={steer} onInput={(e) => setSteer(e.currentTarget.value)} />
            <button type="submit">Send</button>
          </form>
          {task.status === 'paused' && task.pause?.reason === 'budget' && <button onClick={() => void post('/resume')}>Resume</button>}
          <button class="danger" onClick={() => void (confirm('Cancel this task?') && post('/cancel'))}>
            Cancel task
          </button>
        </div>
      )}

      {subagents.length > 0 && (
        <>
          <h3>Subagents</h3>
          <ul class="subagents">
            {subagents.map(({ task: c, depth }) => (
              <li key={c.id} data-task={c.id} class={`depth-${Math.min(depth, 5)}`}>
                <span class={`status ${c.status}`}>{c.status}</span> <a href={`#/tasks/${encodeURIComponent(c.id)}`}>{c.description || c.id}</a>{' '}
                <span class="hint">{c.subagent_type}</span>
                {c.background && <span class="tag">background</span>}
                {c.error && <span class="hint"> · {c.error.code}</span>}
              </li>
            ))}
          </ul>
        </>
      )}

      <h3>Stream</h3>
      {!showAll && items.length > SHOWN && (
        <button class="link" onClick={() => setShowAll(true)}>
          Show the {items.length - SHOWN} earlier items
        </button>
      )}
      <div class="timeline">
        {shown.map((item) => (
          <ItemView item={item} />
        ))}
      </div>

      {task.artifacts?.length > 0 && (
        <>
          <h3>Artifacts</h3>
          <ul class="artifacts">
            {task.artifacts.map((a: any) => (
              <li>
                <button class="link" onClick={() => void download(a.url, a.path.split('/').pop()).catch(report)}>
                  {a.relativePath ?? a.path}
                </button>{' '}
                <span class="hint">
                  {a.fsType} · {tokens(a.size)} bytes
                </span>
              </li>
            ))}
          </ul>
        </>
      )}
      {task.changes && (
        <>
          <h3>Changes (worktree{task.candidates ? ', the selected attempt' : ''})</h3>
          <button
            class="link"
            onClick={() =>
              void text(`/tasks/${encodeURIComponent(id)}/changes.diff`)
                .then(setDiff)
                .catch(report)
            }
          >
            Show the diff
          </button>
          {diff !== null && <pre class="diff">{diff}</pre>}
        </>
      )}
      <h3>Transcript</h3>
      {transcript === null ? (
        <button
          class="link"
          onClick={() =>
            void api<{ messages: unknown[] }>(`/tasks/${encodeURIComponent(id)}/messages`)
              .then((r) => setTranscript(r.messages))
              .catch(report)
          }
        >
          Load the conversation as the model saw it
        </button>
      ) : (
        <div class="transcript">
          {transcript.map((m: any) => (
            <details>
              <summary>{m.role}</summary>
              <pre>{pretty(m.content)}</pre>
            </details>
          ))}
        </div>
      )}
    </section>
  );
}
