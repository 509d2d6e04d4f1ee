import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { AppError, errorBody } from '../errors/app-error.ts';
import { publicMessage } from '../errors/public-message.ts';
import { storageFaultOf } from '../store/storage-guard.ts';

/** Framework error codes that are the client's fault, mapped to the contract's codes. */
const frameworkCodes: Record<string, string> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_request',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_json',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'invalid_request',
};

/**
 * One error handler for every route: validation errors become `400 invalid_request` with one
 * `details` entry per bad field, an AppError keeps its code, a client error keeps its message, and
 * a 5xx is logged in full and answered generically.
 */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    if (hasZodFastifySchemaValidationErrors(err)) {
      const where = err.validationContext ?? 'body';
      const details = err.validation.map((v) => ({
        field: [where, ...v.instancePath.split('/').filter(Boolean)].join('.'),
        message: v.message ?? 'invalid',
      }));
      const fields = details.map((d) => d.field).join(', ');
      return reply.status(400).send(errorBody('invalid_request', `invalid request: ${fields}`, details));
    }
    if (err instanceof AppError) {
      if (err.headers) reply.headers(err.headers);
      return reply.status(err.statusCode).send(errorBody(err.code, publicMessage(err), err.details));
    }
    const fault = storageFaultOf(err);
    if (fault) {
      request.log.error({ err }, 'database write failed');
      reply.header('retry-after', '30');
      return reply
        .status(fault === 'storage_full' ? 507 : 503)
        .send(errorBody(fault, fault === 'storage_full' ? "the service's disk is full; retry later" : 'the service cannot write its database; retry later'));
    }
    // A file write that found no room (a route without a mapping of its own): the caller did
    // nothing wrong and may retry, which a 500 would not tell it.
    if (err.code === 'ENOSPC' || err.code === 'EDQUOT') {
      request.log.error({ err }, 'disk full');
      reply.header('retry-after', '30');
      return reply.status(507).send(errorBody('storage_full', "the service's disk is full; retry later"));
    }
    const status = err.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      const code = frameworkCodes[err.code] ?? (status === 413 ? 'payload_too_large' : 'invalid_request');
      return reply.status(status).send(errorBody(code, publicMessage(err)));
    }
    request.log.error({ err }, 'unhandled error');
    return reply.status(500).send(errorBody('internal_error', 'internal server error'));
  });

  app.setNotFoundHandler((request, reply) => {
    reply.status(404).send(errorBody('not_found', `route ${request.method} ${request.url.split('?')[0]} not found`));
  });
}

/**
 * Errors the router raises before any route runs (a malformed percent-encoding, a path parameter
 * over the length limit), answered in the contract's shape.
 */
export function frameworkErrorHandler(err: FastifyError, _request: unknown, reply: FastifyReply): void {
  if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    reply.status(414).send(errorBody('uri_too_long', 'a path segment of the URL is too long'));
    return;
  }
  reply.status(400).send(errorBody('invalid_url', 'the URL is not valid (malformed percent-encoding?)'));
}

const clientErrors: Record<string, [number, string, string, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large', 'headers_too_large', 'the request line and headers are too large'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'request_timeout', 'the request was not received in time'],
  ERR_HTTP_HEADERS_TIMEOUT: [408, 'Request Timeout', 'request_timeout', 'the request headers were not received in time'],
};

/**
 * Node's own parser errors (oversized headers or URL, timeouts, garbage), answered on the raw socket
 * in the contract's shape before it is closed.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, text, code, message] = clientErrors[err.code ?? ''] ?? [400, 'Bad Request', 'bad_request', 'the request could not be parsed'];
  const body = JSON.stringify(errorBody(code, message));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${text}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}
