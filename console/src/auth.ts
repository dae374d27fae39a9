// Sign-in for the console (docs/console.md): OAuth 2.0 authorization code with PKCE S256 (RFC 6749 4.1, RFC 7636,
// RFC 9700 2.1). Tokens live in this module's memory only; sessionStorage holds the PKCE verifier and the state for
// the one round trip to /oauth/authorize, and is cleared when the callback uses them.
import createClient from 'openapi-fetch';
import type { paths as OAuthPaths } from '../../test/ecosystem/generated/oauth.ts';
import { sha256 } from './sha256.ts';

const PENDING_KEY = 'acs-console-sign-in';
export const CALLBACK_PATH = '/console/callback';

interface PendingSignIn {
  tenant: string;
  clientId: string;
  verifier: string;
  state: string;
  returnTo: string;
}

export interface Session {
  tenant: string;
  clientId: string;
  accessToken: string;
  refreshToken: string | undefined;
  /** Milliseconds since the epoch when the access token expires. */
  expiresAt: number;
  scope: string[];
}

const oauth = createClient<OAuthPaths>({ baseUrl: location.origin });

function base64url(bytes: Uint8Array): string {
  let text = '';
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
}

function randomString(): string {
  return base64url(crypto.getRandomValues(new Uint8Array(32)));
}

/** RFC 7636 4.2: BASE64URL(SHA256(verifier)), with Web Crypto where the page is a secure context. */
async function s256(verifier: string): Promise<string> {
  const bytes = new TextEncoder().encode(verifier);
  if (globalThis.crypto?.subtle) return base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes)));
  return base64url(sha256(bytes));
}

export function redirectUri(): string {
  return `${location.origin}${CALLBACK_PATH}`;
}

interface ConsoleConfig {
  tenant: string;
  clientId: string;
}

/** The tenant's console client, from the server's public lookup (docs/console.md). */
async function consoleConfig(tenant: string): Promise<ConsoleConfig> {
  const response = await fetch(`/console/config?tenant=${encodeURIComponent(tenant)}`, { headers: { accept: 'application/json' } });
  if (response.status === 404 || response.status === 400) throw new Error(`No tenant named “${tenant}” on this server.`);
  if (!response.ok) throw new Error(`The server answered ${response.status} to the console's configuration request.`);
  return (await response.json()) as ConsoleConfig;
}

/** Starts a sign-in: leaves the page for the server's sign-in form. */
export async function startSignIn(tenant: string, returnTo: string): Promise<void> {
  const config = await consoleConfig(tenant);
  const pending: PendingSignIn = { tenant: config.tenant, clientId: config.clientId, verifier: randomString(), state: randomString(), returnTo };
  sessionStorage.setItem(PENDING_KEY, JSON.stringify(pending));
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: pending.clientId,
    redirect_uri: redirectUri(),
    code_challenge: await s256(pending.verifier),
    code_challenge_method: 'S256',
    state: pending.state,
  });
  location.assign(`/oauth/authorize?${query.toString()}`);
}

function formBody(fields: Record<string, string>): string {
  return new URLSearchParams(fields).toString();
}

type TokenAnswer = { access_token: string; expires_in: number; scope: string; refresh_token?: string };

function sessionOf(tenant: string, clientId: string, answer: TokenAnswer): Session {
  return {
    tenant,
    clientId,
    accessToken: answer.access_token,
    refreshToken: answer.refresh_token,
    expiresAt: Date.now() + answer.expires_in * 1000,
    scope: answer.scope.split(' ').filter(Boolean),
  };
}

/** Finishes a sign-in on /console/callback: checks the state, exchanges the code. Answers the session and where to go. */
export async function finishSignIn(search: URLSearchParams): Promise<{ session: Session; returnTo: string }> {
  const stored = sessionStorage.getItem(PENDING_KEY);
  sessionStorage.removeItem(PENDING_KEY);
  if (!stored) throw new Error('This sign-in was not started here, or was already used. Sign in again.');
  const pending = JSON.parse(stored) as PendingSignIn;
  const error = search.get('error');
  if (error) throw new Error(`The sign-in was refused: ${search.get('error_description') ?? error}.`);
  if (search.get('state') !== pending.state) throw new Error('The sign-in answer does not match the request (state). Sign in again.');
  const code = search.get('code');
  if (!code) throw new Error('The sign-in answer has no code. Sign in again.');
  const { data, error: tokenError } = await oauth.POST('/oauth/token', {
    body: { grant_type: 'authorization_code', code, redirect_uri: redirectUri(), client_id: pending.clientId, code_verifier: pending.verifier },
    bodySerializer: formBody,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  if (!data) throw new Error(`The code exchange failed: ${JSON.stringify(tokenError)}`);
  return { session: sessionOf(pending.tenant, pending.clientId, data as TokenAnswer), returnTo: pending.returnTo };
}

/** A new session from the refresh token (rotation: the answer carries the next refresh token, RFC 9700 4.14.2). */
export async function refresh(session: Session): Promise<Session> {
  if (!session.refreshToken) throw new Error('The session has expired. Sign in again.');
  const { data } = await oauth.POST('/oauth/token', {
    body: { grant_type: 'refresh_token', refresh_token: session.refreshToken, client_id: session.clientId },
    bodySerializer: formBody,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  if (!data) throw new Error('The session has expired. Sign in again.');
  return sessionOf(session.tenant, session.clientId, data as TokenAnswer);
}

/** Revokes the refresh token on sign-out (RFC 7009); the access token expires by itself. */
export async function signOut(session: Session): Promise<void> {
  if (!session.refreshToken) return;
  await oauth
    .POST('/oauth/revoke', {
      body: { token: session.refreshToken, token_type_hint: 'refresh_token', client_id: session.clientId },
      bodySerializer: formBody,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    })
    .catch(() => undefined);
}
