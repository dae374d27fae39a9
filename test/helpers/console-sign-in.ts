// The console's sign-in as a browser and the console would run it (docs/api-reference.md 13): PKCE, the form, the code.
import { createHash, randomBytes } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import type { App } from '../../src/app.js';
import { form } from './oauth.js';

export interface Pkce {
  verifier: string;
  challenge: string;
}

/** RFC 7636 4.1 and 4.2: a random verifier and its S256 challenge. */
export function pkce(): Pkce {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export interface AuthorizeParameters {
  client_id: string;
  redirect_uri: string;
  response_type?: string;
  code_challenge?: string;
  code_challenge_method?: string;
  state?: string;
}

export function authorizeParameters(clientId: string, redirectUri: string, challenge: Pkce, state = 'state-1'): Record<string, string> {
  return {
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    code_challenge: challenge.challenge,
    code_challenge_method: 'S256',
    state,
  };
}

export function getAuthorize(app: App, parameters: Record<string, string>, query?: string) {
  return app.inject({ method: 'GET', url: `/oauth/authorize?${query ?? new URLSearchParams(parameters).toString()}` });
}

export interface ShownForm {
  response: LightMyRequestResponse;
  /** `name=value` of the CSRF cookie, as a browser sends it back. */
  cookie: string;
  csrfToken: string;
  /** The hidden fields of the form, as it posts them. */
  hidden: Record<string, string>;
}

const unescape = (value: string) =>
  value.replaceAll('&quot;', '"').replaceAll('&#39;', "'").replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&amp;', '&');

/** Reads what a browser would from a shown form: its cookie and hidden fields. */
export function formOf(response: LightMyRequestResponse): ShownForm {
  const setCookie = response.headers['set-cookie'];
  const cookieLine = Array.isArray(setCookie) ? setCookie[0]! : setCookie!;
  const hidden: Record<string, string> = {};
  for (const match of response.body.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) hidden[match[1]!] = unescape(match[2]!);
  return { response, cookie: cookieLine.split(';')[0]!, csrfToken: hidden['csrf_token']!, hidden };
}

export async function showForm(app: App, parameters: Record<string, string>): Promise<ShownForm> {
  const response = await getAuthorize(app, parameters);
  if (response.statusCode !== 200) throw new Error(`authorize failed: ${response.statusCode} ${response.body}`);
  return formOf(response);
}

export function postAuthorize(app: App, fields: Record<string, string>, cookie?: string) {
  return app.inject({
    method: 'POST',
    url: '/oauth/authorize',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) },
    payload: form(fields),
  });
}

/** Posts the shown form with the login. */
export function submitForm(app: App, shown: ShownForm, username: string, password: string, overrides: Record<string, string> = {}) {
  return postAuthorize(app, { ...shown.hidden, username, password, ...overrides }, shown.cookie);
}

/** The query of a redirect's Location. */
export function redirectQuery(response: LightMyRequestResponse): URLSearchParams {
  return new URL(response.headers.location as string).searchParams;
}

/** The whole sign-in up to the code; throws when it does not end in a 303 with a code. */
export async function signInCode(app: App, parameters: Record<string, string>, username: string, password: string): Promise<string> {
  const shown = await showForm(app, parameters);
  const response = await submitForm(app, shown, username, password);
  if (response.statusCode !== 303) throw new Error(`sign-in failed: ${response.statusCode} ${response.body}`);
  return redirectQuery(response).get('code')!;
}

export function exchangeCode(app: App, fields: { code: string; redirect_uri: string; client_id: string; code_verifier: string }) {
  return app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: form({ grant_type: 'authorization_code', ...fields }),
  });
}

export function refreshPublic(app: App, clientId: string, refreshToken: string) {
  return app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: form({ grant_type: 'refresh_token', client_id: clientId, refresh_token: refreshToken }),
  });
}
