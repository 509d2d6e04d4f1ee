/**
 * Throttles text deltas: the first delta after a quiet spell goes out at once (no added latency
 * for a slow stream), and deltas that follow within `windowMs` are joined into one event at the end
 * of the window, so a fast stream of single tokens becomes a handful of stored events (each at most
 * about `maxChars`). `flush()` must be called before any other event to keep the order.
 */
export function createDeltaCoalescer(emit: (step: number, text: string) => void, windowMs = 15, maxChars = 8192) {
  let step = 0;
  let text = '';
  let timer: NodeJS.Timeout | null = null;

  const send = () => {
    if (!text) return false;
    const out = text;
    text = '';
    emit(step, out);
    return true;
  };
  const tick = () => {
    // Something was sent during the window: keep throttling; otherwise the stream went quiet.
    timer = send() ? setTimeout(tick, windowMs) : null;
  };

  return {
    push(s: number, delta: string) {
      if (s !== step) {
        send();
        step = s;
      }
      text += delta;
      if (!timer) {
        send();
        timer = setTimeout(tick, windowMs);
      } else if (text.length >= maxChars) {
        send();
      }
    },
    flush() {
      send();
    },
    /** Stops the window timer (the run ended). */
    close() {
      send();
      if (timer) clearTimeout(timer);
      timer = null;
    },
  };
}
