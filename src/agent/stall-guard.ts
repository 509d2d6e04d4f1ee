/** The model sent no byte for `ms` while a response was awaited. */
export class ModelStallError extends Error {
  constructor(readonly ms: number) {
    super(`the model sent nothing for ${ms} ms; the request was cut`);
    this.name = 'ModelStallError';
  }
}

/** True when `err` or one of its causes is a ModelStallError. */
export function isStall(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof ModelStallError || (e as Error).name === 'ModelStallError') return true;
  }
  return false;
}

/**
 * A fetch that cuts a model request when no byte arrives for `ms`: before the response headers,
 * and between body chunks while the reader is waiting for one. Time the caller spends elsewhere
 * (running tools) is not counted, because the clock only runs inside a pending read.
 */
export function stallGuardedFetch(ms: number, inner: typeof fetch = fetch): typeof fetch {
  return async (input, init) => {
    const stall = new AbortController();
    const signal = init?.signal ? AbortSignal.any([init.signal, stall.signal]) : stall.signal;
    const arm = () => setTimeout(() => stall.abort(new ModelStallError(ms)), ms);
    let timer = arm();
    let res: Response;
    try {
      res = await inner(input, { ...init, signal });
    } catch (err) {
      throw stall.signal.aborted ? stall.signal.reason : err;
    } finally {
      clearTimeout(timer);
    }
    if (!res.body) return res;
    const reader = res.body.getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        timer = arm();
        try {
          const { done, value } = await reader.read();
          if (done) controller.close();
          else controller.enqueue(value);
        } catch (err) {
          controller.error(stall.signal.aborted ? stall.signal.reason : err);
        } finally {
          clearTimeout(timer);
        }
      },
      cancel(reason) {
        clearTimeout(timer);
        return reader.cancel(reason);
      },
    });
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}
