// The matched route's config (its `scope`, `noStore`, ... and its URL pattern), read once per request.
import type { FastifyContextConfig, FastifyRequest } from 'fastify';

/** What Fastify puts in every route's config beside the route's own options: its URL pattern and method. */
export type RouteConfig = FastifyContextConfig & { url?: string; method?: string | string[] };

declare module 'fastify' {
  interface FastifyRequest {
    /** The matched route's config once read (routeConfig below); null before. */
    routeConfigRead: RouteConfig | null;
  }
}

/**
 * `request.routeOptions` is a getter that builds a new object of fourteen fields on every access; the hooks of a
 * request read the config five times (scope, noStore, the URL pattern for the bearer check, the metrics and Location
 * headers). The config itself is one object per route: read it once and keep it on the request. Its `url` is the
 * route's pattern (`routeOptions.url` is the same field), undefined when no route matched (404).
 */
export function routeConfig(request: FastifyRequest): RouteConfig {
  return (request.routeConfigRead ??= request.routeOptions.config as RouteConfig);
}
