// The operator console (docs/console.md): the built single-page application under /console/, and the one public
// lookup it needs before sign-in, GET /console/config?tenant=, the tenant's console client id. Everything else the
// console does goes through the public APIs with the token it got at /oauth/authorize.
import { readFile, stat } from 'node:fs/promises';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ProblemError } from '../../errors.js';
import type { Services } from '../../services/index.js';
import { TENANT_NAME_PATTERN } from '../../services/oauth/tenant.service.js';

/** Where `npm run build` writes the console: dist/console at the project root, from src/ and from dist/ alike. */
export const DEFAULT_CONSOLE_DIRECTORY = fileURLToPath(new URL('../../../dist/console/', import.meta.url));

/**
 * Only this origin's own files: no inline script or style, no third party, never framed, forms post only here (the
 * sign-in form is the server's own page at /oauth/authorize, reached by navigation, not by a form of the console).
 */
export const CONSOLE_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.map': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
};

const ConfigQuery = Type.Object(
  {
    tenant: Type.String({ pattern: TENANT_NAME_PATTERN.source, description: 'The tenant name, as in `tenant create NAME`.' }),
  },
  { additionalProperties: false },
);

const ConsoleConfig = Type.Object(
  {
    tenant: Type.String({ description: 'The tenant name.' }),
    clientId: Type.String({ description: 'The tenant\'s console client id (`consoleClientId` of `tenant create`).' }),
    redirectPath: Type.String({ description: 'The redirect path registered for it, relative to PUBLIC_URL.' }),
  },
  { additionalProperties: false },
);

const Problem = Type.Object({}, { additionalProperties: true, description: 'An RFC 9457 problem.' });

export interface ConsoleRouteOptions {
  services: Services;
  /** The built console; DEFAULT_CONSOLE_DIRECTORY unless a test points elsewhere. */
  directory?: string;
}

const consoleRoutes: FastifyPluginAsyncTypebox<ConsoleRouteOptions> = async (app, { services, directory = DEFAULT_CONSOLE_DIRECTORY }) => {
  const root = normalize(directory.endsWith(sep) ? directory : `${directory}${sep}`);

  app.get(
    '/console/config',
    {
      logLevel: 'warn',
      schema: {
        hide: true,
        tags: ['Console'],
        summary: 'The console client of a tenant',
        operationId: 'getConsoleConfig',
        security: [],
        description: 'What the console needs to start a sign-in for a tenant: its public client id (docs/console.md).',
        querystring: ConfigQuery,
        response: { 200: ConsoleConfig, 400: Problem, 404: Problem },
      },
    },
    async (request, reply) => {
      const clientId = await services.tenants.consoleClientId(request.query.tenant);
      return reply
        .header('cache-control', 'no-store')
        .send({ tenant: request.query.tenant, clientId, redirectPath: '/console/callback' });
    },
  );

  /** The file under the console directory for a request path, or null when there is none (or it escapes the root). */
  async function fileFor(path: string): Promise<string | null> {
    const relative = path.replace(/^\/console\/?/, '');
    if (relative === '' || relative.includes('\u0000')) return null;
    let decoded: string;
    try {
      decoded = decodeURIComponent(relative);
    } catch {
      return null;
    }
    const file = normalize(join(root, decoded));
    if (!file.startsWith(root)) return null;
    const found = await stat(file).catch(() => null);
    return found?.isFile() ? file : null;
  }

  async function serve(path: string, reply: import('fastify').FastifyReply) {
    const index = join(root, 'index.html');
    const indexFound = await stat(index).catch(() => null);
    if (!indexFound?.isFile()) {
      throw new ProblemError(503, 'console-not-built', 'Console Not Built', {
        detail: 'The operator console has not been built: run `npm run build` (or `npm start`, which builds it when stale).',
      });
    }
    const file = (await fileFor(path)) ?? null;
    reply.header('content-security-policy', CONSOLE_CSP).header('x-content-type-options', 'nosniff').header('referrer-policy', 'no-referrer');
    if (file === null) {
      // A file-like path that is not there is a 404; every other path is a client route of the application.
      if (/\/assets\/|\.[a-z0-9]{1,5}$/i.test(path)) {
        throw new ProblemError(404, 'not-found', 'Not Found', { detail: `No console file ${path}.` });
      }
      return reply.type(CONTENT_TYPES['.html']!).header('cache-control', 'no-cache').send(await readFile(index));
    }
    const type = CONTENT_TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream';
    // Vite names every asset by its content hash: an asset never changes under its name.
    const cache = file.includes(`${sep}assets${sep}`) ? 'public, max-age=31536000, immutable' : 'no-cache';
    return reply.type(type).header('cache-control', cache).send(await readFile(file));
  }

  app.get('/console', { logLevel: 'warn', schema: { hide: true } }, async (_request, reply) => reply.redirect('/console/', 302));
  app.get('/console/*', { logLevel: 'warn', schema: { hide: true } }, async (request, reply) => serve(new URL(request.url, 'http://x').pathname, reply));
};

export default consoleRoutes;
