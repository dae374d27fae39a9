// Client authentication at the OAuth endpoints: a secret by HTTP Basic (RFC 6749 2.3.1, Appendix B) or form post, or a
// private_key_jwt assertion (RFC 7523 2.2); one method per request.
import type { FastifyRequest } from 'fastify';
import { OAuthError } from '../../errors.js';
import { JWT_BEARER_ASSERTION_TYPE, type ClientAssertionService } from '../../services/oauth/client-assertion.service.js';
import type { AuthenticatedClient, ClientService } from '../../services/oauth/client.service.js';

export type FormBody = Record<string, string | string[] | undefined>;

export function invalidClient(realm: string, description = 'Client authentication failed.'): OAuthError {
  // RFC 6749 5.2: 401 with a challenge for the scheme the client used; unknown id and wrong secret look the same.
  return new OAuthError('invalid_client', description, 401, {
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

/** The two ways a client proves who it is (docs/api-reference.md 3.1). */
export interface ClientAuthenticators {
  clients: ClientService;
  clientAssertions: ClientAssertionService;
}

/** The one hint an assertion's refusal gives: which of its checks failed is not said (RFC 7521 4.2.1). */
const ASSERTION_REFUSED =
  'Client authentication failed: the client assertion was not accepted (RFC 7523 section 3: ES256 by the key of the ' +
  'client\'s device, iss and sub the client id, aud this server, exp within 5 minutes, jti used once).';

/**
 * RFC 7523 2.2: `client_assertion_type` and `client_assertion` together, with no other client credentials
 * (RFC 6749 2.3: one method per request). A form `client_id`, optional, must name the assertion's client (RFC 7521 4.2).
 */
async function authenticateByAssertion(
  request: FastifyRequest,
  body: FormBody,
  assertions: ClientAssertionService,
  realm: string,
): Promise<AuthenticatedClient> {
  const assertionType = single(body, 'client_assertion_type');
  const assertion = single(body, 'client_assertion');
  if (request.headers.authorization !== undefined || single(body, 'client_secret') !== undefined) {
    throw new OAuthError('invalid_request', 'Authenticate with a client secret or with a client assertion, not both.');
  }
  if (!assertionType || !assertion) {
    throw new OAuthError('invalid_request', 'Send client_assertion_type and client_assertion together (RFC 7523 section 2.2).');
  }
  if (assertionType !== JWT_BEARER_ASSERTION_TYPE) {
    throw invalidClient(realm, `Client authentication failed: client_assertion_type must be ${JWT_BEARER_ASSERTION_TYPE}.`);
  }
  const client = await assertions.authenticate(assertion);
  const formId = single(body, 'client_id');
  if (!client || (formId !== undefined && formId !== client.clientId)) throw invalidClient(realm, ASSERTION_REFUSED);
  return client;
}

export async function authenticateClient(
  request: FastifyRequest,
  body: FormBody,
  { clients, clientAssertions }: ClientAuthenticators,
  realm: string,
): Promise<AuthenticatedClient> {
  if (body['client_assertion_type'] !== undefined || body['client_assertion'] !== undefined) {
    return authenticateByAssertion(request, body, clientAssertions, realm);
  }
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

/** The services a public client's identification needs besides the confidential methods. */
export interface PublicClientAuthenticators extends ClientAuthenticators {
  clients: ClientService;
}

/**
 * RFC 6749 2.1 and 3.2.1: a public client has no credentials and identifies itself by `client_id` alone; the grants
 * that allow it (authorization code with PKCE, refresh, revocation) call this. A request carrying any credential is
 * authenticated as before; a confidential client naming only its id is refused like a wrong secret.
 */
export async function authenticateClientOrPublic(
  request: FastifyRequest,
  body: FormBody,
  authenticators: PublicClientAuthenticators,
  realm: string,
): Promise<AuthenticatedClient> {
  const credentialsSent =
    request.headers.authorization !== undefined ||
    body['client_secret'] !== undefined ||
    body['client_assertion'] !== undefined ||
    body['client_assertion_type'] !== undefined;
  if (credentialsSent) return authenticateClient(request, body, authenticators, realm);
  const clientId = single(body, 'client_id');
  if (!clientId) throw invalidClient(realm);
  const client = await authenticators.clients.findPublic(clientId);
  if (!client) throw invalidClient(realm);
  return client;
}
