// The pino logger: JSON lines with the request id; credentials are redacted wherever they could appear.
import { pino, type Logger, type DestinationStream } from 'pino';

/** Field names whose values never reach a log line (docs/house-style.md convention 12, docs/security-checklist.md 38). */
export const SECRET_FIELDS = ['authorization', 'client_secret', 'password', 'refresh_token', 'access_token', 'token', 'credential', 'clientSecret'];

const redactPaths = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  // A failed query's bound parameters (PGlite errors carry them) can hold password and secret hashes.
  'err.params',
  ...SECRET_FIELDS.flatMap((field) => [field, `*.${field}`, `*.*.${field}`]),
];

const SECRET_QUERY = new RegExp(`([?&](?:${SECRET_FIELDS.join('|')})=)[^&#]*`, 'gi');

/** Query strings can carry credentials (clients that misuse `?access_token=`): mask their values. */
export function redactUrl(url: string): string {
  return url.replace(SECRET_QUERY, '$1[Redacted]');
}

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      redact: { paths: redactPaths, censor: '[Redacted]' },
      serializers: {
        req(request: { method: string; url: string; hostname?: string; ip?: string; id?: string }) {
          return { method: request.method, url: redactUrl(request.url), host: request.hostname, remoteAddress: request.ip };
        },
      },
    },
    destination,
  );
}

type LevelName = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
const LEVEL_NAMES: LevelName[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'];

/**
 * Fastify's `childLoggerFactory`: the request's child logger (bound to its request id) is made when the request
 * first logs at an enabled level. Making one formats its bindings through the redaction paths, which cost about 5 %
 * of a request that logs nothing (the common case at LOG_LEVEL=warn). The lines it writes are the same.
 */
export function lazyChildLogger(parent: Logger, bindings: pino.Bindings, options: pino.ChildLoggerOptions): Logger {
  let child: Logger | undefined;
  let pending = bindings;
  const made = () => (child ??= parent.child(pending, options));
  const lazy = Object.create(parent) as Logger;
  for (const level of LEVEL_NAMES) {
    lazy[level] = ((...args: Parameters<pino.LogFn>) => {
      if (child || parent.isLevelEnabled(level)) made()[level](...args);
    }) as pino.LogFn;
  }
  lazy.child = ((childBindings: pino.Bindings, childOptions?: pino.ChildLoggerOptions) =>
    made().child(childBindings, childOptions)) as unknown as Logger['child'];
  lazy.bindings = () => made().bindings();
  // Bindings added later (the tenant and client once the bearer token is checked) go on every line written after,
  // including Fastify's "request completed". The prototype's setBindings would change the parent logger itself.
  lazy.setBindings = (more: pino.Bindings) => {
    if (child) child.setBindings(more);
    else pending = { ...pending, ...more };
  };
  return lazy;
}
