// Renders every error as RFC 9457 problem details (docs/api-reference.md 7.1): domain errors, validation, framework 4xx, outages.
import { STATUS_CODES as HTTP_REASONS } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, onSendHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import FindMyWay, { type HTTPMethod } from 'find-my-way';
import { meaningOfDatabaseError } from '../db/errors.js';
import { PROBLEM_TYPE_BASE, ProblemError, ServiceUnavailableError, type FieldError } from '../errors.js';

interface AjvErrorLike {
  instancePath?: string;
  keyword?: string;
  message?: string;
  params?: Record<string, unknown>;
}

const STATUS_TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  408: 'Request Timeout',
  409: 'Conflict',
  410: 'Gone',
  413: 'Content Too Large',
  414: 'URI Too Long',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

const STATUS_CODES: Record<number, string> = {
  400: 'bad-request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not-found',
  405: 'method-not-allowed',
  406: 'not-acceptable',
  408: 'request-timeout',
  409: 'conflict',
  410: 'gone',
  413: 'payload-too-large',
  414: 'uri-too-long',
  415: 'unsupported-media-type',
  422: 'unprocessable',
  429: 'rate-limited',
  431: 'headers-too-large',
  500: 'internal',
  503: 'unavailable',
};

/**
 * How many field errors a 400 lists (docs/security-cases.md G46). Our largest request body has 6 fields, so 20 lists every
 * field of any body that is wrong everywhere at once, with room for a few bad items; past that the entries repeat one
 * mistake item after item. `errorCount` still counts them all. With fields cut to FIELD_MAX characters (at most 6 bytes
 * each once JSON-escaped) and messages to MESSAGE_MAX, the errors and the detail that repeats them stay under 40 KiB,
 * so the whole answer, whose `instance` is bounded by Node's 16 KiB header limit, stays under 64 KiB.
 */
export const MAX_LISTED_ERRORS = 20;
const FIELD_MAX = 100;
const MESSAGE_MAX = 200;
/** The characters of a 4xx detail that reach the log. */
const LOGGED_DETAIL_MAX = 500;

/** At most `max` UTF-16 units of `text`, marked with `…` when cut, never ending inside a surrogate pair. */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const end = /[\uD800-\uDBFF]/.test(text[max - 1]!) ? max - 1 : max;
  return `${text.slice(0, end)}…`;
}

function fieldError(error: AjvErrorLike, context: string | undefined): FieldError {
  let path = (error.instancePath ?? '')
    .split('/')
    .filter(Boolean)
    .map((segment) => segment.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce((acc, segment) => (/^\d+$/.test(segment) ? `${acc}[${segment}]` : acc ? `${acc}.${segment}` : segment), '');
  let message = error.message ?? 'is invalid';
  if (error.keyword === 'required' && typeof error.params?.missingProperty === 'string') {
    path = path ? `${path}.${error.params.missingProperty}` : error.params.missingProperty;
    message = 'is required';
  } else if (error.keyword === 'additionalProperties' && typeof error.params?.additionalProperty === 'string') {
    // The name of an unknown field is the client's and may be as long as the body: cut below.
    path = path ? `${path}.${error.params.additionalProperty}` : error.params.additionalProperty;
    message = 'is not a known field';
  } else if (context === 'params' && error.keyword === 'minLength' && error.params?.limit === 1) {
    // `/operatorapi/mobiledevices/` matches the item route with an empty id: the slash is the mistake.
    message = 'is empty: the path ends with a slash; leave it off (without it, the path names the whole collection)';
  } else if (error.keyword === 'enum' && Array.isArray(error.params?.allowedValues)) {
    // Name the words the parameter takes (Ajv's own message says only that there are some).
    message = `must be one of: ${error.params.allowedValues.map(String).join(', ')}`;
  }
  if (!path) path = context ?? 'body';
  return { field: cut(path, FIELD_MAX), message: cut(message, MESSAGE_MAX) };
}

/**
 * `/commands/0` → `commands[0]`; a missing or unknown property names itself. Lists the first `max` distinct errors and
 * counts them all. Only the listed ones are turned into paths: a body can hold 100,000 unknown fields, and counting
 * them must stay cheap (docs/security-cases.md G46).
 */
export function fieldErrorsFromAjv(
  errors: AjvErrorLike[],
  context?: string,
  max = MAX_LISTED_ERRORS,
): { errors: FieldError[]; count: number } {
  const listed: FieldError[] = [];
  const seen = new Set<string>();
  // A choice of words (a union of literals) fails as one `const` error per word and an `anyOf`: say the words once.
  const choices = new Map<string, unknown[]>();
  for (const error of errors) {
    if (error.keyword === 'const' && 'allowedValue' in (error.params ?? {})) {
      const path = error.instancePath ?? '';
      choices.set(path, [...(choices.get(path) ?? []), error.params!.allowedValue]);
    }
  }
  for (const original of errors) {
    // Ajv adds an `if` error when a `then` fails; the errors of the `then` already name the fields (validation.ts).
    if (original.keyword === 'if') continue;
    const words = choices.get(original.instancePath ?? '');
    if (words && original.keyword === 'const') continue;
    const error = words && original.keyword === 'anyOf' ? { ...original, keyword: 'enum', params: { allowedValues: words } } : original;
    const property = error.params?.missingProperty ?? error.params?.additionalProperty ?? '';
    const key = `${error.instancePath ?? ''}\u0000${String(property)}\u0000${error.message ?? ''}`;
    if (seen.has(key)) continue;
    seen.add(key);
    if (listed.length < max) listed.push(fieldError(error, context));
  }
  return { errors: listed, count: seen.size };
}

export function problemBody(
  request: FastifyRequest,
  status: number,
  code: string,
  title: string,
  extra: { detail?: string | undefined; errors?: FieldError[] | undefined; extensions?: Record<string, unknown> } = {},
) {
  return {
    ...extra.extensions,
    type: PROBLEM_TYPE_BASE + code,
    title,
    status,
    ...(extra.detail !== undefined ? { detail: extra.detail } : {}),
    instance: request.url.split('?')[0],
    requestId: String(request.id),
    ...(extra.errors && extra.errors.length > 0 ? { errors: extra.errors } : {}),
  };
}

export function sendProblem(reply: FastifyReply, error: ProblemError): FastifyReply {
  for (const [name, value] of Object.entries(error.headers)) reply.header(name, value);
  return reply
    .code(error.status)
    .type('application/problem+json')
    .send(
      problemBody(reply.request, error.status, error.code, error.title, {
        detail: error.detail,
        errors: error.errors,
        extensions: error.extensions,
      }),
    );
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The setting a route's own `bodyLimit` comes from, named in its 413 (default: BODY_LIMIT). */
    bodyLimitSetting?: string;
  }
}

export interface ProblemDetailsOptions {
  /** BODY_LIMIT, named in a 413 so the client knows how far to shrink. */
  bodyLimit: number;
  /** The setting that sets `bodyLimit`, when it is not BODY_LIMIT (a route with a limit of its own: JOB_MAX_BYTES). */
  bodyLimitSetting?: string;
  /**
   * True once the app is closing (app.ts): an answer still in flight then asks its client to close the connection.
   * Set in the same onSend hook as the header check below, so an answer passes one hook, not two.
   */
  closing?: () => boolean;
}

/** What a framework 4xx should tell the client to do, where Fastify's own message does not. */
function frameworkDetail(error: FastifyError, options: ProblemDetailsOptions | undefined): string {
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE' && options) {
    return `The request body is larger than the limit of ${options.bodyLimit} bytes (${options.bodyLimitSetting ?? 'BODY_LIMIT'}); send less per request.`;
  }
  if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return 'This API takes JSON only: send the body with Content-Type: application/json (docs/api-reference.md 7.2).';
  }
  return error.message;
}

/** Maps any thrown error to a ProblemError; unknown errors become a 500 whose detail reveals nothing. */
export function toProblem(error: FastifyError | Error, options?: ProblemDetailsOptions): ProblemError {
  if (error instanceof ProblemError) return error;
  const fastifyError = error as FastifyError & { validation?: AjvErrorLike[]; validationContext?: string };
  if (fastifyError.validation) {
    const { errors, count } = fieldErrorsFromAjv(fastifyError.validation, fastifyError.validationContext);
    const more = count - errors.length;
    return new ProblemError(400, 'validation', 'Request validation failed', {
      detail: errors.map((e) => `${e.field}: ${e.message}`).join('; ') + (more > 0 ? `; … and ${more} more` : ''),
      errors,
      // RFC 9457 section 3.2 extension: how many errors there are in all, when `errors` lists only the first of them.
      extensions: { errorCount: count },
    });
  }
  const database = meaningOfDatabaseError(error);
  if (database) {
    return database.status === 503
      ? new ServiceUnavailableError(database.detail)
      : new ProblemError(400, 'bad-request', 'Bad Request', { detail: database.detail });
  }
  const status = fastifyError.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    // Framework client errors (bad JSON, body too large, media type, rate limit) carry safe messages.
    return new ProblemError(status, STATUS_CODES[status] ?? 'client-error', STATUS_TITLES[status] ?? 'Client Error', {
      detail: frameworkDetail(fastifyError, options),
    });
  }
  return new ProblemError(500, 'internal', 'Internal Server Error', {
    detail: 'An unexpected error occurred. Quote the requestId when reporting it.',
  });
}

/**
 * A complete HTTP/1.1 answer for a request Node's parser refused before Fastify saw it (a header block over the
 * parser's limit, a malformed request line, a timeout): still a problem with its requestId and X-Request-Id
 * (docs/api-reference.md 7.1). No `instance`: the request line was never read.
 */
export function rawProblemAnswer(status: number, detail: string, requestId: string): string {
  const body = JSON.stringify({
    type: PROBLEM_TYPE_BASE + (STATUS_CODES[status] ?? 'client-error'),
    title: STATUS_TITLES[status] ?? 'Client Error',
    status,
    detail,
    requestId,
  });
  return (
    `HTTP/1.1 ${status} ${HTTP_REASONS[status] ?? 'Client Error'}\r\nContent-Type: application/problem+json\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`
  );
}

/**
 * A character Node refuses in a header value when it writes the head (RFC 9110 section 5.5: no CR, LF, NUL or other
 * controls; Node's own test, `checkInvalidHeaderChar` in `_http_common`, also refuses anything past U+00FF).
 */
const UNWRITABLE_VALUE = /[^\t\x20-\x7e\x80-\xff]/;

/**
 * The reply's headers Node would refuse to write. Only values are checked: every header name is the service's own
 * constant, while a value may carry something from the request. One regular expression per value: this runs on
 * every response.
 */
function unwritableHeaders(reply: FastifyReply): string[] | null {
  let refused: string[] | null = null;
  const headers = reply.getHeaders();
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || typeof value === 'number') continue;
    const bad = typeof value === 'string' ? UNWRITABLE_VALUE.test(value) : value.some((item) => UNWRITABLE_VALUE.test(String(item)));
    if (bad) (refused ??= []).push(name);
  }
  return refused;
}

/**
 * Node throws ERR_INVALID_CHAR only when the head is written, after every hook and error handler, and Fastify then
 * answers its own JSON without X-Request-Id. This last onSend check drops such a header first. The values written into
 * headers are the service's own, ids from the request (percent-encoded by routes/shared/headers.ts) and the sanitised
 * request id, so a value that still cannot be written came from the request: a success turns into a 400 problem; an
 * answer that already is an error keeps its status and body, without the header (docs/security-cases.md G45).
 */
const dropUnwritableHeaders: onSendHookHandler = (request, reply, payload, done) => {
  const refused = unwritableHeaders(reply);
  if (refused === null) return done(null, payload);
  for (const name of refused) reply.removeHeader(name);
  request.log.warn({ headers: refused }, 'a response header could not be written; it was left out');
  if (reply.statusCode >= 400) return done(null, payload);
  done(
    new ProblemError(400, 'bad-request', 'Bad Request', {
      detail: 'The request holds a value that cannot be written in a response header.',
    }),
  );
};

/** Methods a 405 may offer, in the order `Allow` lists them. */
const METHODS: HTTPMethod[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

export default fp(
  async function problemDetails(app: FastifyInstance, options: ProblemDetailsOptions) {
    const { closing } = options;
    app.addHook(
      'onSend',
      closing === undefined
        ? dropUnwritableHeaders
        : function closeOrCheck(request, reply, payload, done) {
            if (closing()) reply.header('connection', 'close');
            dropUnwritableHeaders.call(this, request, reply, payload, done);
          },
    );

    // Every route's method and path, to tell "no such path" (404) from "not this method here" (405 with Allow,
    // RFC 9110 section 15.5.6). Fastify's own router answers only for the method asked.
    const routes = FindMyWay();
    app.addHook('onRoute', (route) => {
      for (const method of [route.method].flat()) {
        if (METHODS.includes(method as HTTPMethod) && !routes.hasRoute(method as HTTPMethod, route.url)) {
          routes.on(method as HTTPMethod, route.url, () => undefined);
        }
      }
    });

    app.setErrorHandler(function renderProblem(error: FastifyError, request, reply) {
      // A route with a body limit of its own (bulk jobs, docs/api-reference.md 14) names that limit and its setting.
      const { bodyLimit: routeLimit, config } = request.routeOptions;
      const ownLimit = routeLimit !== undefined && routeLimit !== options?.bodyLimit ? config.bodyLimitSetting : undefined;
      const problem = toProblem(error, ownLimit !== undefined && options ? { ...options, bodyLimit: routeLimit!, bodyLimitSetting: ownLimit } : options);
      if (problem.status >= 500) request.log.error({ err: error }, 'request failed');
      else if (problem.status !== 401 && problem.status !== 404) {
        // A detail can repeat 20 field names the client chose; one log line keeps its start (docs/security-cases.md G46).
        const errorCount = problem.extensions.errorCount;
        request.log.info(
          { code: problem.code, ...(errorCount !== undefined ? { errorCount } : {}) },
          problem.detail === undefined ? undefined : cut(problem.detail, LOGGED_DETAIL_MAX),
        );
      }
      return sendProblem(reply, problem);
    });

    app.setNotFoundHandler(function notFound(request, reply) {
      const path = request.url.split('?')[0]!;
      const allowed = METHODS.filter((method) => routes.find(method, path) !== null);
      if (allowed.length > 0) {
        return sendProblem(
          reply,
          new ProblemError(405, 'method-not-allowed', 'Method Not Allowed', {
            detail: `${request.method} is not allowed on ${path}; it takes ${allowed.join(', ')}.`,
            headers: { allow: allowed.join(', ') },
          }),
        );
      }
      return sendProblem(reply, new ProblemError(404, 'not-found', 'Not Found', { detail: `No route ${request.method} ${path}.` }));
    });
  },
  { name: 'problem-details' },
);

