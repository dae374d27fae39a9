// The error vocabulary: one class per kind of domain error, each with its HTTP status and RFC 9457 problem type.

export interface FieldError {
  field: string;
  message: string;
}

export interface ProblemInit {
  detail?: string;
  errors?: FieldError[];
  /** Extra response headers (e.g. `Sunset`, `WWW-Authenticate`). */
  headers?: Record<string, string>;
  /** Extra problem members (RFC 9457 section 3.2 extensions). */
  extensions?: Record<string, unknown>;
}

/** Problem type URIs are relative references under one namespace, so clients can switch on them. */
export const PROBLEM_TYPE_BASE = 'https://access-credential-service.dev/problems/';

export class ProblemError extends Error {
  readonly detail: string | undefined;
  readonly errors: FieldError[] | undefined;
  readonly headers: Record<string, string>;
  readonly extensions: Record<string, unknown>;

  constructor(
    readonly status: number,
    readonly code: string,
    readonly title: string,
    init: ProblemInit = {},
  ) {
    super(init.detail ?? title);
    this.name = 'ProblemError';
    this.detail = init.detail;
    this.errors = init.errors;
    this.headers = init.headers ?? {};
    this.extensions = init.extensions ?? {};
  }

  get type(): string {
    return PROBLEM_TYPE_BASE + this.code;
  }
}

export class BadRequestError extends ProblemError {
  constructor(detail: string, errors?: FieldError[]) {
    super(400, 'bad-request', 'Bad Request', { detail, ...(errors ? { errors } : {}) });
  }
}

export class UnauthorizedError extends ProblemError {
  /** `headers`: more than the challenge, such as the `Sunset` and `Link` of removed HTTP Basic (docs/api-reference.md 3.5, 4.4). */
  constructor(detail: string, wwwAuthenticate: string, headers: Record<string, string> = {}) {
    super(401, 'unauthorized', 'Unauthorized', { detail, headers: { ...headers, 'www-authenticate': wwwAuthenticate } });
  }
}

export class ForbiddenError extends ProblemError {
  constructor(detail: string, headers?: Record<string, string>) {
    super(403, 'forbidden', 'Forbidden', { detail, ...(headers ? { headers } : {}) });
  }
}

export class NotFoundError extends ProblemError {
  constructor(detail = 'The requested resource does not exist.') {
    super(404, 'not-found', 'Not Found', { detail });
  }
}

export class ConflictError extends ProblemError {
  constructor(detail: string) {
    super(409, 'conflict', 'Conflict', { detail });
  }
}

export class GoneError extends ProblemError {
  constructor(detail: string, headers: Record<string, string>, extensions?: Record<string, unknown>) {
    super(410, 'gone', 'Gone', { detail, headers, ...(extensions ? { extensions } : {}) });
  }
}

export class UnprocessableError extends ProblemError {
  constructor(detail: string, errors?: FieldError[]) {
    super(422, 'unprocessable', 'Unprocessable Content', { detail, ...(errors ? { errors } : {}) });
  }
}

/** A summary followed by every field's reason, so the detail alone says why (docs/api-reference.md 4.3: "the detail says so"). */
export function detailWithReasons(summary: string, errors: FieldError[]): string {
  return errors.length === 0 ? `${summary}.` : `${summary}: ${errors.map((error) => `${error.field}: ${error.message}`).join('; ')}`;
}

/**
 * 429 with RFC 9110 10.2.3's `Retry-After` (docs/api-reference.md 7.4): a budget that is spent, and the detail says
 * which and what to do.
 */
export class TooManyRequestsError extends ProblemError {
  constructor(detail: string, retryAfterSeconds: number) {
    const seconds = Math.max(1, Math.ceil(retryAfterSeconds));
    super(429, 'rate-limited', 'Too Many Requests', { detail, headers: { 'retry-after': String(seconds) } });
  }
}

export class ServiceUnavailableError extends ProblemError {
  /** `retryAfterSeconds`: RFC 9110 10.2.3's delay-seconds, when the client should ask again. */
  constructor(detail = 'The service cannot reach its database right now. Retry shortly.', retryAfterSeconds = 1) {
    super(503, 'unavailable', 'Service Unavailable', { detail, headers: { 'retry-after': String(retryAfterSeconds) } });
  }
}

/**
 * RFC 6749 section 5.2 errors of the OAuth endpoints: rendered as `{error, error_description}`, never as problems.
 */
export class OAuthError extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
    readonly status = 400,
    readonly headers: Record<string, string> = {},
  ) {
    super(description);
    this.name = 'OAuthError';
  }
}

/**
 * docs/api-reference.md 12: a claim link that can no longer be used answers 410 naming why (`state`: `claimed` when its
 * devices are all enrolled, `expired`, `revoked`), so the app can tell its user to ask for a new link.
 */
export class ClaimEndedError extends ProblemError {
  constructor(readonly state: 'claimed' | 'expired' | 'revoked') {
    const detail = {
      claimed: 'This claim link has been used by as many phones as it allows. Ask for a new link.',
      expired: 'This claim link has expired. Ask for a new link.',
      revoked: 'This claim link was revoked. Ask for a new link.',
    }[state];
    super(410, `claim-${state}`, 'Claim No Longer Usable', { detail, extensions: { state } });
  }
}
