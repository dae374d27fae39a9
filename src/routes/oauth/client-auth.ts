// Client authentication at the OAuth endpoints: HTTP Basic (RFC 6749 2.3.1, Appendix B) or form post, never both.
import type { FastifyRequest } from 'fastify';
import { OAuthError } from '../../errors.js';
import type { AuthenticatedClient, ClientService } from '../../services/oauth/client.service.js';

export type FormBody = Record<string, string | string[] | undefined>;

export function invalidClient(realm: string): OAuthError {
  // RFC 6749 5.2: 401 with a challenge for the scheme the client used; unknown id and wrong secret look the same.
  return new OAuthError('invalid_client', 'Client authentication failed.', 401, {
    'www-authenticate': `Basic realm="${realm}"`,
  });
}

/** Appendix B: id and secret are form-urlencoded before base64; `+` is a space. */
function formDecode(value: string): string | null {
  // Most ids and secrets (ours are base64url and UUIDs) have nothing encoded: no escape to undo, no copy to make.
  if (!value.includes('%') && !value.includes('+')) return value;
  try {
    return decodeURIComponent(value.replaceAll('+', ' '));
  } catch {
    return null;
  }
}

function parseBasic(header: string, realm: string): { clientId: string; clientSecret: string } {
  const encoded = header.slice(6).trim();
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || encoded.length % 4 === 1) throw invalidClient(realm);
  const decoded = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw invalidClient(realm);
  const clientId = formDecode(decoded.slice(0, colon));
  const clientSecret = formDecode(decoded.slice(colon + 1));
  if (!clientId || !clientSecret) throw invalidClient(realm);
  return { clientId, clientSecret };
}

/** One value per parameter (RFC 6749 3.1: parameters must not be repeated). */
export function single(body: FormBody, name: string): string | undefined {
  const value = body[name];
  if (Array.isArray(value)) throw new OAuthError('invalid_request', `The parameter ${name} is repeated.`);
  return value;
}

export async function authenticateClient(
  request: FastifyRequest,
  body: FormBody,
  clients: ClientService,
  realm: string,
): Promise<AuthenticatedClient> {
  const header = request.headers.authorization;
  const formId = single(body, 'client_id');
  const formSecret = single(body, 'client_secret');
  let credentials: { clientId: string; clientSecret: string };
  if (header !== undefined) {
    if (!/^Basic /i.test(header)) throw invalidClient(realm);
    if (formSecret !== undefined) {
      // RFC 6749 2.3: a client must not use more than one authentication method per request.
      throw new OAuthError('invalid_request', 'Send client credentials by HTTP Basic or in the form, not both.');
    }
    credentials = parseBasic(header, realm);
    if (formId !== undefined && formId !== credentials.clientId) {
      throw new OAuthError('invalid_request', 'The client_id in the form differs from the one in HTTP Basic.');
    }
  } else {
    if (!formId || !formSecret) throw invalidClient(realm);
    credentials = { clientId: formId, clientSecret: formSecret };
  }
  // No client id or secret holds a NUL, and PostgreSQL text cannot: looked up, it would be a 500 instead of a 401.
  if (
    credentials.clientId.length > 256 ||
    credentials.clientSecret.length > 512 ||
    credentials.clientId.includes('\u0000')
  ) {
    throw invalidClient(realm);
  }
  const client = await clients.authenticate(credentials.clientId, credentials.clientSecret);
  if (!client) throw invalidClient(realm);
  return client;
}
