// RFC 6749 5.2 error bodies for the OAuth endpoints: what anything thrown there becomes, and how it is written.
import type { FastifyError, FastifyReply } from 'fastify';
import { meaningOfDatabaseError } from '../db/errors.js';
import { OAuthError } from '../errors.js';

/** RFC 6749 5.1: token responses and their errors are never cached. */
export const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' };

export function sendOAuthError(reply: FastifyReply, error: OAuthError): FastifyReply {
  return reply
    .code(error.status)
    .headers({ ...NO_STORE, ...error.headers })
    .type('application/json')
    .send({ error: error.error, error_description: error.description });
}

/** Maps anything thrown in this context to an RFC 6749 5.2 body. */
export function toOAuthError(error: FastifyError): OAuthError {
  if (error instanceof OAuthError) return error;
  const database = meaningOfDatabaseError(error);
  if (database) {
    return database.status === 503
      ? new OAuthError('temporarily_unavailable', database.detail, 503, { 'retry-after': '1' })
      : new OAuthError('invalid_request', database.detail);
  }
  switch (error.statusCode) {
    case 413:
      return new OAuthError('invalid_request', 'The request body is too large.', 413);
    case 415:
      return new OAuthError(
        'invalid_request',
        'The request body must be application/x-www-form-urlencoded (RFC 6749 section 4).',
      );
    case 429:
      return new OAuthError('temporarily_unavailable', 'Too many requests from this address. Retry later.', 429);
    default:
      if (typeof error.statusCode === 'number' && error.statusCode < 500) {
        return new OAuthError('invalid_request', 'The request is malformed.');
      }
      return new OAuthError('server_error', 'An unexpected error occurred.', 500);
  }
}
