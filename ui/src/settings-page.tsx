import { useEffect, useState } from 'preact/hooks';
import { api, ApiError } from './api.ts';
import { age, money, tokens } from './format.ts';

interface Budget {
  scope: string;
  id: string;
  maxTokens: number | null;
  maxCostUsd: number | null;
  spent: { tokens: number; costMicroUsd: number };
}
interface Webhook {
  id: string;
  url: string;
  events: string[];
  createdAt: string;
  failingSince: string | null;
  disabled: { at: string; reason: string } | null;
}
interface Delivery {
  id: string;
  event: string;
  taskId: string;
  attempts: number;
  status: string;
  lastError: string | null;
  createdAt: string;
}

const message = (err: unknown) => (err instanceof ApiError ? `${err.code}: ${err.message}` : String(err));

/** A standing budget (parent task or user): what it allows, what is spent; set or removed here. */
function Budgets() {
  const [scope, setScope] = useState('user');
  const [id, setId] = useState('');
  const [budget, setBudget] = useState<Budget | null>(null);
  const [limits, setLimits] = useState({ maxTokens: '', maxCostUsd: '' });
  const [error, setError] = useState<string | null>(null);
  const path = () => `/budgets/${scope}/${encodeURIComponent(id.trim())}`;
  const look = () =>
    api<Budget>(path())
      .then((b) => (setBudget(b), setError(null)))
      .catch((err) => (setBudget(null), setError(err instanceof ApiError && err.status === 404 ? `no budget for ${scope} ${id}` : message(err))));
  const save = () => {
    const body: Record<string, number> = {};
    if (limits.maxTokens) body.maxTokens = Number(limits.maxTokens);
    if (limits.maxCostUsd) body.maxCostUsd = Number(limits.maxCostUsd);
    api<Budget>(path(), { method: 'PUT', body })
      .then((b) => (setBudget(b), setError(null)))
      .catch((err) => setError(message(err)));
  };
  const remove = () =>
    api(path(), { method: 'DELETE' })
      .then(() => (setBudget(null), setError(null)))
      .catch((err) => setError(message(err)));
  return (
    <div class="budgets">
      <h3>Budgets</h3>
      <form class="filters" onSubmit={(e) => (e.preventDefault(), void look())}>
        <select name="scope" value={scope} onChange={(e) => setScope(e.currentTarget.value)}>
          <option value="user">user</option>
          <option value="parent">parent task</option>
        </select>
        <input name="budgetId" placeholder="u-42 or T-123" value={id} onInput={(e) => setId(e.currentTarget.value)} />
        <button type="submit" disabled={!id.trim()}>
          Look up
        </button>
      </form>
      {budget && (
        <p class="budget">
          {budget.scope} <strong>{budget.id}</strong>: spent {tokens(budget.spent.tokens)} tokens of {tokens(budget.maxTokens)},{' '}
          {money(budget.spent.costMicroUsd)} of {budget.maxCostUsd === null ? '—' : `$${budget.maxCostUsd}`}
        </p>
      )}
      {id.trim() && (
        <form class="filters" onSubmit={(e) => (e.preventDefault(), void save())}>
          <input
            name="maxTokens"
            placeholder="max tokens"
            value={limits.maxTokens}
            onInput={(e) => setLimits({ ...limits, maxTokens: e.currentTarget.value })}
          />
          <input
            name="maxCostUsd"
            placeholder="max cost (USD)"
            value={limits.maxCostUsd}
            onInput={(e) => setLimits({ ...limits, maxCostUsd: e.currentTarget.value })}
          />
          <button type="submit">Set</button>
          {budget && (
            <button type="button" class="danger" onClick={() => void remove()}>
              Remove
            </button>
          )}
        </form>
      )}
      {error && <p class="error">{error}</p>}
    </div>
  );
}

/** The tenant's webhooks, each with its latest deliveries and a retry for a failed one. */
function Webhooks() {
  const [hooks, setHooks] = useState<Webhook[] | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  const [deliveries, setDeliveries] = useState<Delivery[]>([]);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api<{ webhooks: Webhook[] }>('/webhooks')
      .then((r) => setHooks(r.webhooks))
      .catch((err) => setError(message(err)));
  }, []);
  const show = (id: string) =>
    api<{ deliveries: Delivery[] }>(`/webhooks/${id}/deliveries?limit=50`)
      .then((r) => (setOpen(id), setDeliveries(r.deliveries)))
      .catch((err) => setError(message(err)));
  const retry = (d: Delivery) =>
    api(`/webhooks/deliveries/${d.id}/retry`, { method: 'POST' })
      .then(() => {
        if (open) void show(open);
      })
      .catch((err) => setError(message(err)));
  return (
    <div class="webhooks">
      <h3>Webhooks</h3>
      {error && <p class="error">{error}</p>}
      {hooks?.length === 0 && <p class="hint">No webhook.</p>}
      <ul>
        {hooks?.map((h) => (
          <li data-webhook={h.id}>
            <button class="link" onClick={() => void show(h.id)}>
              {h.url}
            </button>{' '}
            <span class="hint">
              {h.events.join(', ')} · {h.disabled ? `disabled: ${h.disabled.reason}` : h.failingSince ? `failing since ${age(h.failingSince)}` : 'delivering'}
            </span>
            {open === h.id && (
              <table class="deliveries">
                <thead>
                  <tr>
                    <th>Event</th>
                    <th>Task</th>
                    <th>Status</th>
                    <th class="num">Attempts</th>
                    <th>Last error</th>
                    <th />
                  </tr>
                </thead>
                <tbody>
                  {deliveries.map((d) => (
                    <tr>
                      <td>{d.event}</td>
                      <td>
                        <a href={`#/tasks/${encodeURIComponent(d.taskId)}`}>{d.taskId}</a>
                      </td>
                      <td>{d.status}</td>
                      <td class="num">{d.attempts}</td>
                      <td>{d.lastError ?? ''}</td>
                      <td>{d.status === 'failed' && <button onClick={() => void retry(d)}>Retry</button>}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </li>
        ))}
      </ul>
    </div>
  );
}

export function SettingsPage() {
  return (
    <section>
      <h2>Budgets &amp; webhooks</h2>
      <Budgets />
      <Webhooks />
    </section>
  );
}
