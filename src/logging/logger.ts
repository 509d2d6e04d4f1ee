import pino, { type Logger } from 'pino';

/**
 * The service's one logger. Keys never reach a log line: the Authorization header is redacted
 * wherever a request is logged (request URLs are redacted by the HTTP layer's serializer).
 */
export function createLogger(level: string): Logger {
  return pino({ level, redact: ['req.headers.authorization', 'headers.authorization'] });
}
