/** A non-2xx answer of the service, with the contract's error body. */
export class SubagentApiError extends Error {
  constructor(
    /** HTTP status (0 when the service could not be reached). */
    readonly status: number,
    /** The contract's machine code (`not_found`, `invalid_request`, `budget_exceeded`, ...). */
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'SubagentApiError';
  }
}

/** Reads an error answer (falling back to the status text when it is not the contract's JSON). */
export async function errorOf(res: Response): Promise<SubagentApiError> {
  const text = await res.text().catch(() => '');
  try {
    const { error } = JSON.parse(text) as { error: { code: string; message: string; details?: unknown } };
    return new SubagentApiError(res.status, error.code, error.message, error.details);
  } catch {
    return new SubagentApiError(res.status, `http_${res.status}`, text.slice(0, 500) || res.statusText);
  }
}
