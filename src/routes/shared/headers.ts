// Paths written into `Location` and `Link` (docs/security-cases.md G45): every id in them is percent-encoded here, and only here.
import type { FastifyRequest } from 'fastify';

/**
 * One id as one path segment (RFC 3986 section 3.3): everything outside the unreserved set is percent-encoded, so an
 * id can neither end a `Link` target (`>`), add a parameter (`;`, `,`), split a segment (`/`) nor carry CR, LF or
 * non-ASCII into a header (RFC 9110 section 5.5).
 */
export function pathSegment(id: string | number): string {
  return encodeURIComponent(String(id));
}

/**
 * A path whose interpolated values are ids, each percent-encoded as one segment:
 * resourcePath`/v1/residents/${id}/token-card?version=2`. The literal parts are the service's own and stay as written.
 */
export function resourcePath(literals: TemplateStringsArray, ...ids: (string | number)[]): string {
  let result = literals[0] ?? '';
  ids.forEach((id, index) => {
    result += pathSegment(id) + (literals[index + 1] ?? '');
  });
  return result;
}

/**
 * The path of the request's own route with its parameters percent-encoded (`/deviceapi/mobiledevices/:id/tickets` →
 * `/deviceapi/mobiledevices/phone%201/tickets`), built from the route and the decoded parameters rather than echoed
 * from the request line.
 */
export function routePath(request: FastifyRequest): string {
  const params = new Map<string, unknown>(typeof request.params === 'object' && request.params !== null ? Object.entries(request.params) : []);
  return (request.routeOptions.url ?? '').replace(/:([A-Za-z0-9_]+)/g, (_, name: string) => pathSegment(String(params.get(name) ?? '')));
}

/** An RFC 8288 link-value; `target` comes from `resourcePath` or `routePath`, `rel` is a registered relation type. */
export function linkValue(target: string, rel: string): string {
  return `<${target}>; rel="${rel}"`;
}
