// GET /: a page for whoever opens the server's address in a browser, linking the API documents, the OAuth metadata,
// the key sets and the probes. Not part of any API document: it is for people, and changes freely.
import type { FastifyPluginAsync } from 'fastify';

const LINKS: [section: string, links: [href: string, label: string][]][] = [
  [
    'API documentation',
    [
      ['/operatorapi/apidocs/', 'Operator API: locks, phones, tickets, clients, users, events and webhooks'],
      ['/v1/swagger-ui/', 'Access API (/v1): residents, lock groups, access permissions'],
      ['/deviceapi/apidocs/', 'Device API: ticket downloads for phones, sync for locks'],
      ['/operatorapi/apidocs/json', 'Operator API OpenAPI document (JSON)'],
      ['/v1/swagger-ui/json', 'Access API OpenAPI document (JSON)'],
      ['/deviceapi/apidocs/json', 'Device API OpenAPI document (JSON)'],
      ['/oauth/apidocs/', 'OAuth 2.0: the token endpoints (grants, USER@TENANT, errors), revocation, introspection, metadata, key sets'],
      ['/oauth/apidocs/json', 'OAuth 2.0 OpenAPI document (JSON)'],
    ],
  ],
  [
    'OAuth 2.0',
    [
      ['/.well-known/oauth-authorization-server', 'Authorization server metadata (RFC 8414)'],
      ['/.well-known/jwks.json', 'Access-token keys (RFC 7517); each tenant publishes its ticket keys at /tenants/{tenant}/jwks.json'],
    ],
  ],
  [
    'Operations',
    [
      ['/healthz', 'Liveness'],
      ['/readyz', 'Readiness (database reachable, migrations applied)'],
      ['/metrics', 'Prometheus metrics'],
    ],
  ],
];

const PAGE = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Access credential service</title></head>
<body>
<h1>Access credential service</h1>
<p>This server issues time-limited tickets that let one phone open one lock. Start with the documentation below;
tenants and their first client are made with the command line (<code>acs tenant create NAME</code>).</p>
${LINKS.map(
  ([section, links]) =>
    `<h2>${section}</h2>\n<ul>\n${links.map(([href, label]) => `<li><a href="${href}">${label}</a> <code>${href}</code></li>`).join('\n')}\n</ul>`,
).join('\n')}
</body>
</html>
`;

const landingRoutes: FastifyPluginAsync = async (app) => {
  app.get('/', { logLevel: 'warn', schema: { hide: true } }, async (_request, reply) =>
    reply
      .type('text/html; charset=utf-8')
      // Static text with no script, style or image: the page needs nothing from anywhere.
      .header('content-security-policy', "default-src 'none'")
      .send(PAGE),
  );
};

export default landingRoutes;
