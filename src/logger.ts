// The pino logger: JSON lines with the request id; credentials are redacted wherever they could appear.
import { pino, type Logger, type DestinationStream } from 'pino';

/** Field names whose values never reach a log line (HOUSE-STYLE 12, SECURITY-CHECKLIST 38). */
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
