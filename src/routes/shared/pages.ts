// The `Link: rel="next"` header of a page (docs/api-reference.md 7.3), shared by every list route.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Page } from '../../shared/pagination.js';
import { linkValue, routePath } from './headers.js';

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
