// The console's only way to the APIs: openapi-fetch clients typed with the types generated from the committed OpenAPI
// documents (`npm run generate:client`), so an API change that breaks the console breaks its type check.
import createClient, { type Middleware } from 'openapi-fetch';
import type { paths as AccessPaths } from '../../test/ecosystem/generated/accessapi.ts';
import type { components as OperatorComponents, paths as OperatorPaths } from '../../test/ecosystem/generated/operatorapi.ts';
import type { components as AccessComponents } from '../../test/ecosystem/generated/accessapi.ts';
import { refresh, type Session } from './auth.ts';

export type Schemas = OperatorComponents['schemas'];
export type { OperatorPaths };
export type AccessSchemas = AccessComponents['schemas'];

let session: Session | null = null;
let refreshing: Promise<Session> | null = null;
const listeners = new Set<(session: Session | null) => void>();

export function currentSession(): Session | null {
  return session;
}

export function setSession(next: Session | null): void {
  session = next;
  for (const listener of listeners) listener(next);
}

export function onSession(listener: (session: Session | null) => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** A valid access token, refreshed (once for all callers) when it is about to expire. */
async function accessToken(): Promise<string> {
  if (!session) throw new Error('Not signed in.');
  if (session.expiresAt - Date.now() > 30_000) return session.accessToken;
  refreshing ??= refresh(session).finally(() => {
    refreshing = null;
  });
  try {
    setSession(await refreshing);
  } catch (error) {
    setSession(null);
    throw error;
  }
  return session!.accessToken;
}

const authorization: Middleware = {
  async onRequest({ request }) {
    request.headers.set('authorization', `Bearer ${await accessToken()}`);
    return request;
  },
};

export const operator = createClient<OperatorPaths>({ baseUrl: location.origin });
operator.use(authorization);
export const access = createClient<AccessPaths>({ baseUrl: location.origin });
access.use(authorization);

/** The cursor of the next page from an RFC 8288 `Link: <…>; rel="next"` header, or undefined on the last page. */
export function nextCursor(response: Response): string | undefined {
  const link = response.headers.get('link');
  const match = link?.match(/<([^>]+)>\s*;\s*rel="?next"?/);
  if (!match) return undefined;
  return new URL(match[1]!, location.origin).searchParams.get('cursor') ?? undefined;
}

/** A problem body's human text. */
export function problemText(error: unknown, status?: number): string {
  if (error && typeof error === 'object') {
    const problem = error as { title?: string; detail?: string };
    if (problem.detail) return problem.detail;
    if (problem.title) return problem.title;
  }
  if (error instanceof Error) return error.message;
  return status ? `The server answered ${status}.` : 'The request failed.';
}

export function formatTime(ms: number | undefined): string {
  if (ms === undefined) return '—';
  return new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
}
