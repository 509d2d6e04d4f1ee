/** Micro-dollars as dollars: `$0.0123`; null (no price) as `—`. */
export function money(micro: number | null | undefined): string {
  if (micro === null || micro === undefined) return '—';
  const usd = micro / 1e6;
  return `$${usd >= 100 ? usd.toFixed(0) : usd >= 1 ? usd.toFixed(2) : usd.toFixed(4)}`;
}

/** A duration in ms as `42 s`, `3 min`, `2 h`. */
export function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 90) return `${s} s`;
  if (s < 90 * 60) return `${Math.round(s / 60)} min`;
  if (s < 48 * 3600) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}

/** How long ago an ISO time was. */
export const age = (iso: string | null | undefined, now = Date.now()) => (iso ? `${duration(now - Date.parse(iso))} ago` : '—');

export const tokens = (n: number | null | undefined) => (n === null || n === undefined ? '—' : n.toLocaleString('en-US'));

/** Any value as indented JSON, cut at `max` characters. */
export function pretty(value: unknown, max = 20_000): string {
  const s = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  return s === undefined ? '' : s.length > max ? `${s.slice(0, max)}\n… (${s.length - max} more characters)` : s;
}
