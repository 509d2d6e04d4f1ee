/** The one error shape of the service: a machine `code`, an HTTP status and a human message. */
export class AppError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'AppError';
  }
}

/** New work is refused once shutdown began (reads are still answered until the server closes). */
export const shuttingDown = () => new AppError(503, 'shutting_down', 'the service is shutting down; retry shortly', undefined, { 'retry-after': '5' });

export const notFound = (what: string) => new AppError(404, 'not_found', `${what} not found`);

/** The contract's error body. */
export function errorBody(code: string, message: string, details?: unknown) {
  return { error: details === undefined ? { code, message } : { code, message, details } };
}
