// The pino logger: JSON lines with the request id; credentials are redacted wherever they could appear.
import { pino, type Logger, type DestinationStream } from 'pino';

/** Field names whose values never reach a log line (docs/house-style.md convention 12, docs/security-cases.md 38). */
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

/** A claim code is the credential of its path (docs/api-reference.md 12): everything after `/deviceapi/claims/`. */
const CLAIM_CODE_PATH = /(\/deviceapi\/claims\/)[^?#]*/gi;

/**
 * Query strings can carry credentials (clients that misuse `?access_token=`), and a claim's path is its code: mask
 * their values.
 */
export function redactUrl(url: string): string {
  return url.replace(SECRET_QUERY, '$1[Redacted]').replace(CLAIM_CODE_PATH, '$1[Redacted]');
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
type LazyChildLoggerClass = new (bindings: pino.Bindings, options: pino.ChildLoggerOptions) => Logger;

/** One class per parent logger (the app's), whose prototype is that parent: a request's logger is one small object. */
const lazyClasses = new WeakMap<Logger, LazyChildLoggerClass>();

function lazyClassFor(parent: Logger): LazyChildLoggerClass {
  const known = lazyClasses.get(parent);
  if (known) return known;
  class LazyChildLogger {
    #child: Logger | undefined = undefined;
    #bindings: pino.Bindings;
    /** Bindings added before the child exists (setBindings), merged into it when it is made. */
    #more: pino.Bindings | undefined = undefined;
    #options: pino.ChildLoggerOptions;

    constructor(bindings: pino.Bindings, options: pino.ChildLoggerOptions) {
      this.#bindings = bindings;
      this.#options = options;
    }

    #made(): Logger {
      return (this.#child ??= parent.child(this.#more ? { ...this.#bindings, ...this.#more } : this.#bindings, this.#options));
    }

    #write(level: LevelName, args: Parameters<pino.LogFn>): void {
      if (this.#child || parent.isLevelEnabled(level)) this.#made()[level](...args);
    }

    fatal(...args: Parameters<pino.LogFn>) {
      this.#write('fatal', args);
    }
    error(...args: Parameters<pino.LogFn>) {
      this.#write('error', args);
    }
    warn(...args: Parameters<pino.LogFn>) {
      this.#write('warn', args);
    }
    info(...args: Parameters<pino.LogFn>) {
      this.#write('info', args);
    }
    debug(...args: Parameters<pino.LogFn>) {
      this.#write('debug', args);
    }
    trace(...args: Parameters<pino.LogFn>) {
      this.#write('trace', args);
    }
    child(childBindings: pino.Bindings, childOptions?: pino.ChildLoggerOptions): Logger {
      return this.#made().child(childBindings, childOptions);
    }
    bindings(): pino.Bindings {
      return this.#made().bindings();
    }
    // Bindings added later (the tenant and client once the bearer token is checked) go on every line written after,
    // including Fastify's "request completed". The prototype's setBindings would change the parent logger itself.
    setBindings(more: pino.Bindings): void {
      if (this.#child) this.#child.setBindings(more);
      // Kept, not copied, when it is the first: pino's setBindings does not keep the caller's object either, and the
      // bearer check passes one frozen object per token (plugins/bearer-auth.ts).
      else this.#more = this.#more ? { ...this.#more, ...more } : more;
    }
  }
  // Everything else (level, isLevelEnabled, flush, ...) is the parent's.
  Object.setPrototypeOf(LazyChildLogger.prototype, parent);
  const made = LazyChildLogger as unknown as LazyChildLoggerClass;
  lazyClasses.set(parent, made);
  return made;
}

/**
 * Fastify's `childLoggerFactory`: the request's child logger (bound to its request id) is made when the request
 * first logs at an enabled level. Making one formats its bindings through the redaction paths, which cost about 5 %
 * of a request that logs nothing (the common case at LOG_LEVEL=warn). The lines it writes are the same. The lazy
 * logger is one object of a class made once per parent (no closures per request: this runs on every request).
 */
export function lazyChildLogger(parent: Logger, bindings: pino.Bindings, options: pino.ChildLoggerOptions): Logger {
  const LazyChildLogger = lazyClassFor(parent);
  return new LazyChildLogger(bindings, options);
}
