/**
 * The Docker Engine API did not answer a call within its bound: an engine that accepts the
 * connection and never answers (overloaded, paused, wedged) must not hold a task, the service's
 * start or its end forever.
 */
export class EngineTimeout extends Error {
  constructor(what: string, ms: number) {
    super(`the container engine at DOCKER_HOST did not answer ${what} within ${ms} ms (SANDBOX_ENGINE_TIMEOUT_MS)`);
    this.name = 'EngineTimeout';
  }
}

/**
 * One engine call, bounded: past `ms` it rejects with `EngineTimeout` and its request is aborted
 * (dockerode's `abortSignal`, given to `call`). The race also bounds the calls whose dockerode
 * method does not pass the signal on (an image's inspect). Once the call has answered the signal
 * never fires, so a hijacked exec stream it returned lives on.
 */
export async function engineCall<T>(what: string, ms: number, call: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const err = new EngineTimeout(what, ms);
      controller.abort(err);
      reject(err);
    }, ms);
  });
  try {
    return await Promise.race([call(controller.signal), expired]);
  } finally {
    clearTimeout(timer);
  }
}
