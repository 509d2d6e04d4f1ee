import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { api, ApiError } from './api.ts';
import { money, tokens } from './format.ts';

interface Group {
  key: string;
  tasks: number;
  steps: number;
  totalTokens: number;
  costMicroUsd: number | null;
}
interface Usage {
  totals: Omit<Group, 'key'>;
  groups: Group[];
}

const RANGES = [7, 30, 90];
const DAY = 86_400_000;

/** Cost per day of the range as bars (uPlot; a day without usage is a zero), drawn again when the days change. */
function DayChart({ days, range }: { days: Group[]; range: number }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!box.current) return;
    const byDay = new Map(days.map((d) => [d.key.slice(0, 10), d]));
    const today = Math.floor(Date.now() / DAY) * DAY;
    const xs: number[] = [];
    const cost: number[] = [];
    for (let t = today - (range - 1) * DAY; t <= today; t += DAY) {
      xs.push(t / 1000);
      cost.push((byDay.get(new Date(t).toISOString().slice(0, 10))?.costMicroUsd ?? 0) / 1e6);
    }
    const chart = new uPlot(
      {
        width: Math.min(900, box.current.clientWidth || 900),
        height: 240,
        series: [
          {},
          { label: 'Cost (USD)', stroke: '#2563eb', fill: 'rgba(37,99,235,0.3)', paths: uPlot.paths.bars!({ size: [0.8, 40] }), points: { show: false } },
        ],
        axes: [{}, { size: 70, values: (_u, v) => v.map((x) => `$${x}`) }],
        scales: { x: { time: true } },
      },
      [xs, cost],
      box.current,
    );
    return () => chart.destroy();
  }, [days, range]);
  return <div class="chart" ref={box} />;
}

/** A table of groups with each one's share of the cost drawn as a bar (the most expensive: full width). */
/** `unnamed` names the group whose key is empty (shell tasks have no model). */
function GroupTable({ title, groups, unnamed = '(none)' }: { title: string; groups: Group[]; unnamed?: string }) {
  const top = Math.max(1, ...groups.map((g) => g.costMicroUsd ?? 0));
  return (
    <div class="group">
      <h3>{title}</h3>
      <table>
        <thead>
          <tr>
            <th>{title}</th>
            <th class="num">Tasks</th>
            <th class="num">Tokens</th>
            <th class="num">Cost</th>
            <th class="share" />
          </tr>
        </thead>
        <tbody>
          {groups.map((g) => (
            <tr>
              <td class={g.key ? undefined : 'hint'}>{g.key || unnamed}</td>
              <td class="num">{g.tasks}</td>
              <td class="num">{tokens(g.totalTokens)}</td>
              <td class="num">{money(g.costMicroUsd)}</td>
              <td class="share">
                <div class="bar" style={{ width: `${Math.round(((g.costMicroUsd ?? 0) / top) * 100)}%` }} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Usage and cost over a chosen range: totals, cost by day, and by model, subagent type and user. */
export function UsagePage() {
  const [days, setDays] = useState(30);
  const [data, setData] = useState<Record<string, Usage> | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    const from = new Date(Date.now() - days * DAY).toISOString();
    Promise.all(
      ['day', 'model', 'subagentType', 'user'].map(async (by) => [by, await api<Usage>(`/usage?groupBy=${by}&from=${encodeURIComponent(from)}`)] as const),
    )
      .then((all) => {
        setData(Object.fromEntries(all));
        setError(null);
      })
      .catch((err) => setError(err instanceof ApiError ? err.message : String(err)));
  }, [days]);
  const totals = data?.day.totals;
  return (
    <section class="usage">
      <h2>Usage and cost</h2>
      <label class="range">
        Range{' '}
        <select name="range" value={days} onChange={(e) => setDays(Number(e.currentTarget.value))}>
          {RANGES.map((d) => (
            <option value={d}>last {d} days</option>
          ))}
        </select>
      </label>
      {error && <p class="error">{error}</p>}
      {totals && (
        <p class="totals">
          <strong>{totals.tasks}</strong> tasks · <strong>{tokens(totals.totalTokens)}</strong> tokens ·{' '}
          <strong class="total-cost">{money(totals.costMicroUsd)}</strong>
        </p>
      )}
      {data && <DayChart days={data.day.groups} range={days} />}
      {data && (
        <div class="groups">
          <GroupTable title="Model" groups={data.model.groups} unnamed="shell (no model)" />
          <GroupTable title="Subagent type" groups={data.subagentType.groups} />
          <GroupTable title="User" groups={data.user.groups} />
        </div>
      )}
    </section>
  );
}
