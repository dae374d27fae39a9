// Page query parameters and the `Link: rel="next"` header (docs/api-reference.md 7.3), shared by every list route.
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { defaultsOptional } from '../../schemas/query.js';
import type { Page } from '../../shared/pagination.js';
import { linkValue, routePath } from './headers.js';

export const PageQuery = defaultsOptional(
  Type.Object(
    {
      limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'Page size, 1 to 1000.' }),
      cursor: Type.Optional(
        Type.String({ minLength: 1, maxLength: 512, description: 'Opaque cursor from the `Link: rel="next"` header.' }),
      ),
    },
    { additionalProperties: false },
  ),
);

/**
 * Answers the page's items and, when more remain, a `Link` to the same route and filters with the next cursor. The
 * path is the route's with its ids percent-encoded (G45) and the query is re-serialised form-encoded, so nothing from
 * the request line reaches the header as sent.
 */
export function sendPage<T>(request: FastifyRequest, reply: FastifyReply, page: Page<T>): T[] {
  if (page.nextCursor) linkNextPage(request, reply, page.nextCursor);
  return page.items;
}

/**
 * The `Link: rel="next"` header alone: the same route and query with `parameter` (the cursor, or the event feed's
 * `after`) set to `position`. For an answer cut short that is not a list of items (the lock sync, docs/api-reference.md
 * 6.2) and for the feed, whose position is public.
 */
export function linkNextPage(request: FastifyRequest, reply: FastifyReply, position: string, parameter = 'cursor'): void {
  const query = new URL(request.url, 'http://placeholder').searchParams;
  query.set(parameter, position);
  reply.header('link', linkValue(`${routePath(request)}?${query.toString()}`, 'next'));
}
