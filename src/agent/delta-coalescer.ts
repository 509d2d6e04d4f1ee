/**
 * Joins text deltas that arrive within `windowMs` into one, so a stream of single tokens becomes a
 * handful of stored events (each at most about `maxChars`). `flush()` must be called before any other event to keep the order.
 */
export function createDeltaCoalescer(emit: (step: number, text: string) => void, windowMs = 15, maxChars = 8192) {
  let step = 0;
  let text = '';
  let timer: NodeJS.Timeout | null = null;
  const flush = () => {
    if (timer) clearTimeout(timer);
    timer = null;
    if (!text) return;
    const out = text;
    text = '';
    emit(step, out);
  };
  return {
    push(s: number, delta: string) {
      if (s !== step) flush();
      step = s;
      text += delta;
      if (text.length >= maxChars) flush();
      else timer ??= setTimeout(flush, windowMs);
    },
    flush,
  };
}
