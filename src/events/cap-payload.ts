const DEFAULT_MAX = 16 * 1024;

/**
 * Caps a tool input or output for an event: small values pass unchanged, a large one becomes
 * `{ truncated: true, bytes, preview }` so readers know it was cut (the full value stays with the task).
 */
export function capPayload(value: unknown, max = DEFAULT_MAX): unknown {
  if (value === undefined) return null;
  const json = typeof value === 'string' ? value : JSON.stringify(value);
  if (json === undefined || json.length <= max) return value;
  return { truncated: true, bytes: Buffer.byteLength(json), preview: json.slice(0, max) };
}
