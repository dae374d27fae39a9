// GET and POST /oauth/authorize (RFC 6749 4.1, RFC 7636, RFC 9700 2.1; docs/api-reference.md 13): the console's
// sign-in. GET checks the request and shows the form; POST checks it again, with the CSRF token and the login, and
// answers 303 to the registered redirect URI with the code.
import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../../services/index.js';
import type { AuthorizationOutcome, AuthorizationParameters, AuthorizationRequest } from '../../services/oauth/authorization.service.js';
import { CARRIED_PARAMETERS, errorPage, signInForm } from './sign-in-page.js';

export interface AuthorizationEndpointOptions {
  services: Services;
  issuer: string;
}

/** The one message every refused login shows: nothing tells which part was wrong (docs/api-reference.md 3.2). */
export const SIGN_IN_REFUSED = 'The user or password is wrong, or the user may not sign in here.';
export const CSRF_REFUSED = 'The sign-in form expired or did not come from this page. Please sign in again.';

const CSRF_COOKIE = 'acs_authorize_csrf';
const CSRF_COOKIE_MAX_AGE_SECONDS = 3600;

/** Each page: nothing from anywhere but its own nonce-tagged style, posted only to this origin, never framed. */
function securityHeaders(nonce: string): Record<string, string> {
  return {
    'content-security-policy':
      `default-src 'none'; style-src 'nonce-${nonce}'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-store',
    pragma: 'no-cache',
  };
}

function cookieValue(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

function parametersOf(value: unknown): AuthorizationParameters {
  if (typeof value !== 'object' || value === null) return {};
  const entries = Object.entries(value).filter(
    (entry): entry is [string, string | string[]] =>
      typeof entry[1] === 'string' || (Array.isArray(entry[1]) && entry[1].every((item) => typeof item === 'string')),
  );
  return Object.fromEntries(entries);
}

export function registerAuthorizationEndpoint(app: FastifyInstance, { services, issuer }: AuthorizationEndpointOptions): void {
  const { authorization } = services;
  const base = issuer.replace(/\/+$/, '');
  const secureCookie = base.startsWith('https:');
  const action = `${base}/oauth/authorize`;

  function html(reply: FastifyReply, status: number, nonce: string, body: string) {
    return reply.code(status).headers(securityHeaders(nonce)).type('text/html; charset=utf-8').send(body);
  }

  function showForm(
    request: FastifyRequest,
    reply: FastifyReply,
    status: number,
    signIn: AuthorizationRequest,
    extra: { error?: string; username?: string } = {},
  ) {
    const nonce = randomBytes(16).toString('base64url');
    const csrf = authorization.csrfPair(cookieValue(request, CSRF_COOKIE));
    const parameters = {
      response_type: 'code',
      client_id: signIn.client.clientId,
      redirect_uri: signIn.redirectUri,
      code_challenge: signIn.codeChallenge,
      code_challenge_method: 'S256',
      ...(signIn.state !== undefined ? { state: signIn.state } : {}),
    } satisfies Partial<Record<(typeof CARRIED_PARAMETERS)[number], string>>;
    reply.header(
      'set-cookie',
      `${CSRF_COOKIE}=${csrf.secret}; Path=/oauth/authorize; Max-Age=${CSRF_COOKIE_MAX_AGE_SECONDS}; HttpOnly; SameSite=Strict` +
        (secureCookie ? '; Secure' : ''),
    );
    return html(reply, status, nonce, signInForm({ parameters, csrfToken: csrf.token, nonce, action, ...extra }));
  }

  /** RFC 6749 4.1.2: the parameters go in the redirect URI's query; RFC 9207 adds `iss`. */
  function redirect(reply: FastifyReply, status: 302 | 303, redirectUri: string, parameters: Record<string, string>) {
    const target = new URL(redirectUri);
    for (const [name, value] of Object.entries(parameters)) target.searchParams.append(name, value);
    target.searchParams.append('iss', issuer);
    return reply.code(status).headers({ 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' }).redirect(target.toString(), status);
  }

  /** An outcome that is not a valid request: the error page, or the error sent back to the verified redirect URI. */
  function refuse(reply: FastifyReply, outcome: Exclude<AuthorizationOutcome, { kind: 'valid' }>, status: 302 | 303) {
    if (outcome.kind === 'error-page') {
      const nonce = randomBytes(16).toString('base64url');
      return html(reply, 400, nonce, errorPage(outcome.description, nonce));
    }
    return redirect(reply, status, outcome.redirectUri, {
      error: outcome.error,
      error_description: outcome.description,
      ...(outcome.state !== undefined ? { state: outcome.state } : {}),
    });
  }

  app.get('/oauth/authorize', async (request, reply) => {
    const outcome = await authorization.validate(parametersOf(request.query));
    if (outcome.kind !== 'valid') return refuse(reply, outcome, 302);
    return showForm(request, reply, 200, outcome.request);
  });

  app.post('/oauth/authorize', async (request, reply) => {
    const form = parametersOf(request.body);
    // Only the request's own parameters decide; the login fields and the token are read apart.
    const requestParameters: AuthorizationParameters = Object.fromEntries(
      Object.entries(form).filter(([name]) => !['username', 'password', 'csrf_token'].includes(name)),
    );
    const outcome = await authorization.validate(requestParameters);
    if (outcome.kind !== 'valid') return refuse(reply, outcome, 303);
    const username = typeof form['username'] === 'string' ? form['username'] : undefined;
    const password = typeof form['password'] === 'string' ? form['password'] : undefined;
    const csrfToken = typeof form['csrf_token'] === 'string' ? form['csrf_token'] : undefined;
    // Checked before the login, so a form posted from another site never counts against the user's lockout.
    if (!authorization.csrfValid(cookieValue(request, CSRF_COOKIE), csrfToken)) {
      return showForm(request, reply, 403, outcome.request, { error: CSRF_REFUSED, ...(username ? { username } : {}) });
    }
    const code = username && password ? await authorization.signIn(outcome.request, username, password) : null;
    // Re-shown as a page is (200), with the one generic error; the CSRF refusal above is the 403.
    if (!code) return showForm(request, reply, 200, outcome.request, { error: SIGN_IN_REFUSED, ...(username ? { username } : {}) });
    return redirect(reply, 303, outcome.request.redirectUri, {
      code,
      ...(outcome.request.state !== undefined ? { state: outcome.request.state } : {}),
    });
  });
}
