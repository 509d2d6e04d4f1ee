/**
 * The message of an error as a caller or a model may read it. Node's system errors name the host
 * path they failed on (`ENAMETOOLONG: name too long, realpath '/srv/data/@t/P/...'`); that part is
 * cut, so no path of the service's host reaches an answer, a tool result or an event.
 */
export function publicMessage(err: Error): string {
  const e = err as NodeJS.ErrnoException & { dest?: string };
  if (typeof e.syscall !== 'string' || typeof e.code !== 'string') return err.message;
  const cut = err.message.indexOf(`, ${e.syscall}`);
  let text = cut > 0 ? err.message.slice(0, cut) : `${e.code}: ${e.syscall} failed`;
  for (const p of [e.path, e.dest]) if (p) text = text.split(p).join('…');
  return text;
}
