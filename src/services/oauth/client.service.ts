// OAuth clients (docs/api-reference.md 3.7): create, list, read, delete, rotate the secret, and authenticate at the token endpoint.
import { randomBytes } from 'node:crypto';
import type { Database, Queryable } from '../../db/database.js';
import { holdMobileDeviceForBinding } from '../../db/repositories/mobile-device.repo.js';
import { holdSecuredObjectForBinding } from '../../db/repositories/secured-object.repo.js';
import {
  deleteClient,
  findClient,
  findTenantClient,
  insertClient,
  listClients,
  updateClientSecret,
  type ClientRecord,
} from '../../db/repositories/client.repo.js';
import { BadRequestError, ConflictError, NotFoundError, UnprocessableError } from '../../errors.js';
import { recordChange } from '../audit.service.js';
import type { ActionContext, Clock } from '../context.js';
import { digestsEqual, randomToken, sha256 } from '../../shared/crypto.js';
import { decodeCursor, pageOf, type Page } from '../../shared/pagination.js';
import type { RevocationService } from './revoked-access-tokens.service.js';
import { ALL_SCOPES, BOUND_CLIENT_SCOPES, isKnownScope, ROLE_SCOPES } from '../../shared/scopes.js';
import { BoundedMap } from '../../shared/bounded-map.js';

/** What the API shows of a client: never the secret or its hash (docs/security-cases.md 36). */
export interface Client {
  clientId: string;
  name: string;
  scopes: string[];
  mobileDeviceId?: string;
  securedObjectId?: string;
  creationDate: number;
  /** docs/api-reference.md 4.1: its lock was deleted, so it may only sync. Absent otherwise. */
  decommissioned?: true;
}

export interface NewClient {
  name: string;
  scopes: string[];
  mobileDeviceId?: string | undefined;
  securedObjectId?: string | undefined;
}

export interface AuthenticatedClient {
  clientId: string;
  tenantId: string;
  scopes: string[];
  mobileDeviceId: string | null;
  securedObjectId: string | null;
  /** docs/api-reference.md 4.1: the change number at which its lock was deleted; null while the lock stands. */
  decommissionedSeq: number | null;
  /** The registered redirect URI, as stored (relative to PUBLIC_URL when it starts with `/`); null when none. */
  redirectUri: string | null;
  /** A public client (RFC 6749 2.1): no secret and a redirect URI; it authenticates by `client_id` and PKCE alone. */
  isPublic: boolean;
}

/** docs/api-reference.md 13: the redirect URI of the console's client, relative to PUBLIC_URL. */
export const CONSOLE_REDIRECT_PATH = '/console/callback';

export interface ClientServiceOptions {
  db: Database;
  clock: Clock;
  revocations: RevocationService;
  /** Access-token lifetime: how long a deleted client's tokens must stay refused. */
  accessTokenTtlMs: number;
}

export function toClient(record: ClientRecord): Client {
  return {
    clientId: record.clientId,
    name: record.name,
    scopes: record.scopes,
    ...(record.mobileDeviceId !== null ? { mobileDeviceId: record.mobileDeviceId } : {}),
    ...(record.securedObjectId !== null ? { securedObjectId: record.securedObjectId } : {}),
    creationDate: record.createdAt,
    ...(record.decommissionedSeq !== null ? { decommissioned: true as const } : {}),
  };
}

/** The client as the token endpoint hands it on, whichever way it authenticated. */
export function toAuthenticatedClient(record: ClientRecord): AuthenticatedClient {
  return {
    clientId: record.clientId,
    tenantId: record.tenantId,
    scopes: record.scopes,
    mobileDeviceId: record.mobileDeviceId,
    securedObjectId: record.securedObjectId,
    decommissionedSeq: record.decommissionedSeq,
    redirectUri: record.redirectUri,
    isPublic: record.secretHash === null && record.redirectUri !== null,
  };
}

/**
 * Authenticated clients are kept in memory, so the token endpoint answers a known client without a query. An entry
 * is dropped when any instance deletes the client, rotates its secret or decommissions it (the revocation feed), and
 * re-read after a while anyway; a presented secret that does not match the entry is always checked against the database.
 */
const CLIENT_CACHE_MAX_AGE_MS = 60_000;
const CLIENT_CACHE_MAX_ENTRIES = 10_000;

interface CachedClient {
  client: AuthenticatedClient;
  secretHash: Buffer;
  loadedAt: number;
}

/** Compared against when the client id is unknown, so both failures do the same work (docs/security-cases.md 2). */
const DUMMY_SECRET_HASH = sha256(randomBytes(32).toString('base64url'));

export function createClientService(options: ClientServiceOptions) {
  const { db, clock, revocations } = options;
  const cache = new BoundedMap<string, CachedClient>(CLIENT_CACHE_MAX_ENTRIES);
  /** Bumped by every invalidation: a look-up that overlapped one does not fill the cache with what it read. */
  let cacheGeneration = 0;
  revocations.onClientChanged((clientId) => {
    cache.delete(clientId);
    cacheGeneration++;
  });

  function remember(clientId: string, entry: CachedClient): void {
    // The newest entry: the one loaded longest ago is forgotten first.
    cache.set(clientId, entry);
  }

  function validate(input: NewClient): void {
    const unknown = input.scopes.filter((scope) => !isKnownScope(scope));
    if (unknown.length > 0) {
      // docs/api-reference.md 3.7: unknown scopes are a 400.
      throw new BadRequestError(`Unknown scopes: ${unknown.join(', ')}. Known scopes: ${ALL_SCOPES.join(' ')}.`, [
        { field: 'scopes', message: `unknown scope ${unknown.join(', ')}` },
      ]);
    }
    if (input.mobileDeviceId !== undefined && input.securedObjectId !== undefined) {
      throw new UnprocessableError('A client is bound to one mobile device or one secured object, not both.', [
        { field: 'securedObjectId', message: 'cannot be combined with mobileDeviceId' },
      ]);
    }
  }

  return {
    /** Creates a client in the caller's transaction; the secret is in this answer only. */
    async createIn(tx: Queryable, context: ActionContext, input: NewClient): Promise<Client & { clientSecret: string }> {
      validate(input);
      // A bound client reaches only its device's or lock's data (docs/api-reference.md 3.7): it must exist in the tenant,
      // and stay until this commits, so that its deletion sees this client (docs/api-reference.md 4.1, 4.2).
      if (input.mobileDeviceId !== undefined && !(await holdMobileDeviceForBinding(tx, context.tenantId, input.mobileDeviceId))) {
        throw new UnprocessableError(`No mobile device ${input.mobileDeviceId} in this tenant.`, [
          { field: 'mobileDeviceId', message: 'no such mobile device' },
        ]);
      }
      if (input.securedObjectId !== undefined && !(await holdSecuredObjectForBinding(tx, context.tenantId, input.securedObjectId))) {
        throw new UnprocessableError(`No secured object ${input.securedObjectId} in this tenant.`, [
          { field: 'securedObjectId', message: 'no such secured object' },
        ]);
      }
      const clientSecret = randomToken(32);
      const bound = input.mobileDeviceId !== undefined || input.securedObjectId !== undefined;
      const record: ClientRecord = {
        clientId: randomToken(16),
        tenantId: context.tenantId,
        name: input.name,
        secretHash: sha256(clientSecret),
        // docs/api-reference.md 11.1: a bound client registers its own device's or lock's key.
        scopes: [...new Set([...input.scopes, ...(bound ? BOUND_CLIENT_SCOPES : [])])],
        mobileDeviceId: input.mobileDeviceId ?? null,
        securedObjectId: input.securedObjectId ?? null,
        createdAt: clock(),
        redirectUri: null,
        decommissionedSeq: null,
      };
      await insertClient(tx, record);
      await recordChange(tx, context, record.createdAt, 'client.created', `client:${record.clientId}`, { clientId: record.clientId });
      return { ...toClient(record), clientSecret };
    },

    /**
     * The console's public client (docs/api-reference.md 13): no secret, the redirect URI `{PUBLIC_URL}/console/callback`,
     * and every scope a console sign-in can carry (a user's role narrows them).
     */
    async createConsoleIn(tx: Queryable, context: ActionContext): Promise<Client> {
      const record: ClientRecord = {
        clientId: `console-${randomToken(16)}`,
        tenantId: context.tenantId,
        name: 'Operator console',
        secretHash: null,
        scopes: [...ROLE_SCOPES.admin],
        mobileDeviceId: null,
        securedObjectId: null,
        createdAt: clock(),
        redirectUri: CONSOLE_REDIRECT_PATH,
        decommissionedSeq: null,
      };
      await insertClient(tx, record);
      await recordChange(tx, context, record.createdAt, 'client.created', `client:${record.clientId}`, { clientId: record.clientId });
      return toClient(record);
    },

    /**
     * A public client by its id (RFC 6749 2.1, 3.1.2), or null: unknown, or a confidential client (which must authenticate).
     * The authorization endpoint and the public client's token requests start here.
     */
    async findPublic(clientId: string): Promise<AuthenticatedClient | null> {
      if (clientId.length > 256 || clientId.includes('\u0000')) return null;
      const record = await findClient(db, clientId);
      if (!record) return null;
      const client = toAuthenticatedClient(record);
      return client.isPublic ? client : null;
    },

    async create(context: ActionContext, input: NewClient): Promise<Client & { clientSecret: string }> {
      return db.transaction((tx) => this.createIn(tx, context, input));
    },

    async get(tenantId: string, clientId: string): Promise<Client> {
      const record = await findTenantClient(db, tenantId, clientId);
      if (!record) throw new NotFoundError(`No OAuth client ${clientId}.`);
      return toClient(record);
    },

    async list(tenantId: string, limit: number, cursor?: string): Promise<Page<Client>> {
      const rows = await listClients(db, tenantId, decodeCursor(cursor), limit + 1);
      return pageOf(rows, limit, (row) => ({ createdAt: row.createdAt, id: row.clientId }), toClient);
    },

    /** Deletes the client and refuses its access tokens everywhere within seconds (docs/api-reference.md 3.4). */
    async delete(context: ActionContext, clientId: string): Promise<void> {
      const deleted = await db.transaction(async (tx) => {
        if (!(await deleteClient(tx, context.tenantId, clientId))) return false;
        await revocations.record(tx, 'client', clientId, clock() + options.accessTokenTtlMs);
        await recordChange(tx, context, clock(), 'client.deleted', `client:${clientId}`, { clientId });
        return true;
      });
      if (!deleted) throw new NotFoundError(`No OAuth client ${clientId}.`);
      await revocations.refresh();
    },

    /** A new secret, shown once; the old one stops working at once. Issued access tokens stay valid. */
    async rotateSecret(context: ActionContext, clientId: string): Promise<Client & { clientSecret: string }> {
      const clientSecret = randomToken(32);
      const record = await db.transaction(async (tx) => {
        const existing = await findTenantClient(tx, context.tenantId, clientId);
        if (existing && existing.secretHash === null && existing.redirectUri !== null) {
          // RFC 6749 2.1: a public client runs where a secret cannot be kept; giving it one would make it neither.
          throw new UnprocessableError(`The client ${clientId} is a public client: it has no secret to rotate.`);
        }
        const updated = await updateClientSecret(tx, context.tenantId, clientId, sha256(clientSecret));
        if (!updated) return null;
        // Other instances drop their cached copy of the old secret (revocation feed, docs/api-reference.md 3.4's 5 s).
        await revocations.record(tx, 'client-secret', clientId, clock() + options.accessTokenTtlMs);
        await recordChange(tx, context, clock(), 'client.secret_rotated', `client:${clientId}`, { clientId });
        return updated;
      });
      if (!record) {
        // docs/api-reference.md 12: a client made by a claim authenticates with its phone's key only; it never gets a secret.
        if (await findTenantClient(db, context.tenantId, clientId)) {
          throw new ConflictError(`The OAuth client ${clientId} has no secret: it authenticates with private_key_jwt only.`);
        }
        throw new NotFoundError(`No OAuth client ${clientId}.`);
      }
      await revocations.refresh();
      return { ...toClient(record), clientSecret };
    },

    /**
     * The client if the secret matches, else null. A known client presenting its secret is answered from the cache;
     * unknown ids and wrong secrets cost the same: one look-up, one hash, one constant-time comparison
     * (docs/security-cases.md 2).
     */
    async authenticate(clientId: string, clientSecret: string): Promise<AuthenticatedClient | null> {
      const presented = sha256(clientSecret);
      const cached = cache.get(clientId);
      if (
        cached &&
        clock() - cached.loadedAt < CLIENT_CACHE_MAX_AGE_MS &&
        digestsEqual(presented, cached.secretHash)
      ) {
        return cached.client;
      }
      // Every failure takes this path, whether the id is unknown or the secret wrong: one look-up, one constant-time
      // comparison (docs/security-cases.md 2). A secret rotated on another instance is found here at once.
      const generation = cacheGeneration;
      const record = await findClient(db, clientId);
      // A client without a secret (one made by a claim, docs/api-reference.md 12, or a public client, 13) is compared
      // against the dummy too, and never matches.
      const secretHash = record?.secretHash ?? null;
      const matches = digestsEqual(presented, secretHash ?? DUMMY_SECRET_HASH);
      if (!record || secretHash === null || !matches) return null;
      const client = toAuthenticatedClient(record);
      if (generation === cacheGeneration) remember(clientId, { client, secretHash, loadedAt: clock() });
      return client;
    },
  };
}

export type ClientService = ReturnType<typeof createClientService>;
