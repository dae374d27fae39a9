// buildApp(config, dependencies): the Fastify instance with its plugins and one route group per API. Never listens.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Logger } from 'pino';
import { trustProxyOption, type Config } from './config.js';
import type { Database } from './db/database.js';
import { migrationsCurrent, readMigrations } from './db/migrate.js';
import { lazyChildLogger } from './logger.js';
import metrics, { apiListenerMetricsAccess, createDomainMetrics, registerHeldSyncMetrics, registerWebhookMetrics } from './plugins/metrics.js';
import { routeConfig } from './plugins/route-config.js';
import problemDetails, { rawProblemAnswer, sendProblem } from './plugins/problem-details.js';
import { ProblemError } from './errors.js';
import { validatorCompiler } from './plugins/validation.js';
import healthRoutes from './routes/ops/health.js';
import landingRoutes from './routes/ops/landing.js';
import claimPageRoutes from './routes/ops/claim-page.js';
import consoleRoutes from './routes/ops/console.js';
import oauthRoutes from './routes/oauth/index.js';
import oauthDocs from './routes/oauth/docs.js';
import tenantJwksRoutes from './routes/oauth/tenant-jwks.js';
import accessApi from './routes/access/index.js';
import deviceApi from './routes/device/index.js';
import operatorApi from './routes/operator/index.js';
import removedInterfaceRoutes from './routes/ops/removed-interfaces.js';
import { createServices, type Services } from './services/index.js';
import type { SecretsKey } from './shared/crypto.js';
import type { Resolver } from './services/webhooks/url-guard.js';

export interface AppDependencies {
  db: Database;
  log: Logger;
  /** Encrypts signing keys at rest (resolveSecretsKey). */
  secretsKey: SecretsKey;
  /** Milliseconds since the epoch; tests move it. */
  clock?: () => number;
  /** Resolves webhook host names (default: the system's DNS); tests make a name resolve to a private address. */
  resolveHost?: Resolver;
  /** The built operator console (default dist/console); tests point it elsewhere. */
  consoleDirectory?: string;
}

/** A client's X-Request-Id reaches the logs (as `clientRequestId`) only when it is short and plain. */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:@-]{1,128}$/;

/** The client's X-Request-Id when it is safe to log, else undefined. */
function clientRequestId(headers: Record<string, string | string[] | undefined>): string | undefined {
  const incoming = headers['x-request-id'];
  return typeof incoming === 'string' && SANE_REQUEST_ID.test(incoming) ? incoming : undefined;
}

/**
 * Request size limits, checked in the first hook so their answers are problems with X-Request-Id (docs/api-reference.md 7.1):
 * a request target over 8 KiB answers 414 (RFC 9112 section 3 asks servers to take at least 8000 octets), header
 * fields over 16 KiB answer 431 (RFC 6585 section 5; Node's default limit). Node's parser gets the sum plus room, so
 * it refuses only what is far beyond both; that refusal is a problem too (answerClientError).
 */
const MAX_URL_LENGTH = 8 * 1024;
const MAX_HEADER_FIELDS_SIZE = 16 * 1024;
const PARSER_MAX_HEADER_SIZE = 32 * 1024;

/** The size of the request's header fields as sent: `name: value` and CRLF each. */
function headerFieldsSize(rawHeaders: string[]): number {
  let size = 0;
  for (const part of rawHeaders) size += part.length + 2;
  return size;
}

/**
 * Fastify's clientErrorHandler: Node's parser refused the request before any route, hook or request id existed
 * (header block over the parser's limit, malformed request line, timeout). Without this Fastify writes its own JSON.
 * A client's mistake, so no stack at error level.
 */
function answerClientError(this: FastifyInstance, error: NodeJS.ErrnoException, socket: Socket): void {
  // A reset connection has nobody to answer (https://nodejs.org/api/http.html#event-clienterror).
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, detail] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'The request line and header fields are too large.']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'The request did not arrive in time.']
        : [400, 'The request is not valid HTTP/1.1.'];
  const requestId = randomUUID();
  this.log.info({ requestId, code: error.code }, 'the HTTP parser refused a request');
  if (socket.writable) socket.write(rawProblemAnswer(status, detail, requestId));
  socket.destroy(error);
}

export function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(message)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

export async function buildApp(config: Config, dependencies: AppDependencies) {
  const { db, log } = dependencies;
  const https =
    config.TLS_CERT_FILE && config.TLS_KEY_FILE
      ? { cert: readFileSync(config.TLS_CERT_FILE), key: readFileSync(config.TLS_KEY_FILE), maxHeaderSize: PARSER_MAX_HEADER_SIZE }
      : null;
  const options: FastifyServerOptions = {
    loggerInstance: log,
    childLoggerFactory: (logger, bindings, childOptions, rawRequest) => {
      const client = clientRequestId(rawRequest.headers);
      return lazyChildLogger(logger as Logger, client ? { ...bindings, clientRequestId: client } : bindings, childOptions);
    },
    bodyLimit: config.BODY_LIMIT,
    // Fastify accepts a hop count too, though its type omits it.
    trustProxy: trustProxyOption(config.TRUST_PROXY) as FastifyServerOptions['trustProxy'],
    requestIdHeader: false,
    logController: new LogController({ requestIdLogLabel: 'requestId' }),
    // The request id is always the server's own: it is what the audit trail records (docs/api-reference.md 7.5) and what problem
    // bodies and the X-Request-Id answer carry (docs/api-reference.md 7.1), so a client must not choose it (it could forge another
    // request's id or collide with one). Trusting it from a configured proxy (TRUST_PROXY) was rejected too: proxies
    // commonly pass a client's header through unchanged. The client's own X-Request-Id is kept for correlation as
    // `clientRequestId` on the request's log lines (childLoggerFactory above), sanitised and bounded.
    genReqId: () => randomUUID(),
    clientErrorHandler: answerClientError,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    // Fastify's 10 s default per plugin: loading the API documents' UI (@fastify/swagger-ui reads its static files) took
    // longer than that on a loaded 2-core machine, and the whole start failed. A minute still catches a plugin that
    // never starts.
    pluginTimeout: 60_000,
    routerOptions: { maxParamLength: 256, ignoreTrailingSlash: false },
    // Errors the router raises before any hook or error handler runs (a path that does not decode, a path parameter
    // over maxParamLength): without this Fastify answers its own JSON, not a problem detail (docs/api-reference.md 7.1).
    frameworkErrors(error, request, reply) {
      reply.header('x-request-id', request.id);
      const status = error.statusCode === 414 ? 414 : 400;
      const detail = status === 414 ? 'A path parameter is too long.' : 'The request path is not a valid URL component.';
      return sendProblem(reply, new ProblemError(status, status === 414 ? 'uri-too-long' : 'bad-request', status === 414 ? 'URI Too Long' : 'Bad Request', { detail }));
    },
  };
  // Node's parser refuses a header block over maxHeaderSize with 431 before Fastify; the tighter limits are ours (above).
  const app = (
    https
      ? Fastify({ ...options, https } as FastifyServerOptions)
      : Fastify({ ...options, http: { maxHeaderSize: PARSER_MAX_HEADER_SIZE } } as FastifyServerOptions)
  ) as FastifyInstance;
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();
  typed.setValidatorCompiler(validatorCompiler);

  // docs/api-reference.md 7.2: JSON only. Fastify would also parse text/plain; without a parser other types get 415.
  typed.removeContentTypeParser('text/plain');

  // Read by routeConfig (plugins/route-config.ts): declared here so every request object has the same shape.
  typed.decorateRequest('routeConfigRead', null);

  // Callback-style hooks where nothing is awaited: an async hook costs a promise on every request.
  typed.addHook('onRequest', (request, reply, done) => {
    // The webhook worker yields to requests (services/webhooks/pacing.ts); `services` exists before any request.
    services.requestLoad.note();
    reply.header('x-request-id', request.id);
    // RFC 9111 section 5.2.2.5 (as RFC 6749 section 5.1 does for tokens): an answer holding a secret or credential
    // is never stored by a cache. Routes declare it with `config.noStore`.
    if (routeConfig(request).noStore) reply.header('cache-control', 'no-store');
    // An over-long request is refused and its connection closed, as Node's parser does with the ones it refuses.
    if (request.url.length > MAX_URL_LENGTH) {
      reply.header('connection', 'close');
      return done(new ProblemError(414, 'uri-too-long', 'URI Too Long', { detail: `The request target is longer than ${MAX_URL_LENGTH} characters.` }));
    }
    if (headerFieldsSize(request.raw.rawHeaders) > MAX_HEADER_FIELDS_SIZE) {
      reply.header('connection', 'close');
      return done(
        new ProblemError(431, 'headers-too-large', 'Request Header Fields Too Large', {
          detail: `The header fields are larger than ${MAX_HEADER_FIELDS_SIZE} bytes.`,
        }),
      );
    }
    done();
  });

  // Graceful shutdown: idle keep-alive sockets are closed at once (forceCloseConnections: 'idle'); a socket busy
  // with a request when close() starts is told to close after its response, so close() does not wait on it.
  let closing = false;
  typed.addHook('preClose', async () => {
    closing = true;
  });
  await typed.register(problemDetails, { bodyLimit: config.BODY_LIMIT, closing: () => closing });
  // Read at scrape time, after the services below exist.
  await typed.register(metrics, { db, eventsWritten: () => services.audit.eventsWritten(), access: apiListenerMetricsAccess(config) });

  const migrations = readMigrations();
  await typed.register(healthRoutes, {
    isReady: () =>
      withTimeout(migrationsCurrent(db, migrations), config.DB_CONNECT_TIMEOUT_MS, 'readiness check timed out'),
  });

  await typed.register(landingRoutes);
  await typed.register(claimPageRoutes);

  const services = createServices({
    db,
    config,
    log,
    secretsKey: dependencies.secretsKey,
    clock: dependencies.clock,
    metrics: createDomainMetrics(typed.metrics),
    ...(dependencies.resolveHost ? { resolveHost: dependencies.resolveHost } : {}),
  });
  registerWebhookMetrics(typed.metrics, services.webhookDeliveries);
  registerHeldSyncMetrics(typed.metrics, services.heldSyncs);
  await services.start();
  // Tests and the CLI reach the services the same way the routes do.
  typed.decorate('services', services);
  // docs/lock-sync.md: graceful shutdown answers every held sync at once, so closing waits for no lock's 30 s.
  typed.addHook('preClose', async () => {
    services.heldSyncs.close();
  });
  // The database belongs to the app from here on: closing the app (shutdown, tests) closes it.
  typed.addHook('onClose', async () => {
    await services.stop();
    await db.close();
  });

  // Relative (OpenAPI 3.0.3 allows it): the documents stay the same whatever PUBLIC_URL is, so they can be committed.
  const tokenUrl = '/oauth/token';
  await typed.register(oauthRoutes, {
    services,
    issuer: config.PUBLIC_URL,
    rateLimitPerMinute: config.TOKEN_RATE_LIMIT_PER_MINUTE,
  });
  await typed.register(oauthDocs);
  // Documented with the OAuth endpoints (routes/oauth/openapi-document.ts), but outside their context: its errors are
  // problem details, not RFC 6749 bodies.
  await typed.register(tenantJwksRoutes, { services });
  await typed.register(consoleRoutes, {
    services,
    ...(dependencies.consoleDirectory === undefined ? {} : { directory: dependencies.consoleDirectory }),
  });
  await typed.register(operatorApi, { services, tokenUrl, rateLimitPerMinute: config.API_RATE_LIMIT_PER_MINUTE });
  await typed.register(accessApi, { services, tokenUrl: '/oauth2/token', rateLimitPerMinute: config.API_RATE_LIMIT_PER_MINUTE });
  await typed.register(deviceApi, {
    services,
    tokenUrl,
    rateLimitPerMinute: config.API_RATE_LIMIT_PER_MINUTE,
    claimRateLimitPerMinute: config.CLAIM_RATE_LIMIT_PER_MINUTE,
  });
  await typed.register(removedInterfaceRoutes);

  return typed;
}

export type App = Awaited<ReturnType<typeof buildApp>>;

declare module 'fastify' {
  interface FastifyInstance {
    services: Services;
  }
  interface FastifyContextConfig {
    /** The answer holds a secret or credential: `Cache-Control: no-store` (RFC 9111 section 5.2.2.5). */
    noStore?: boolean;
  }
}
