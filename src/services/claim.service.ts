// Claims (docs/api-reference.md 12): claim links that put a resident's phone (or one device's) in service with the
// phone's own key and a bound client without a secret, and that replace a lost phone in the same step.
import { randomBytes, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Database, Queryable } from '../db/database.js';
import type { AuditEventInput } from '../db/repositories/audit.repo.js';
import { issueForNewMembers } from '../db/repositories/access-permission.repo.js';
import { nextChangeSeq } from '../db/repositories/change-log.repo.js';
import {
  endClaim,
  expireClaims,
  findClaim,
  findClaimByCode,
  holdClaim,
  insertClaim,
  isResidentDevice,
  listClaims,
  markClaimOpened,
  recordClaimedDevice,
  type ClaimFilter,
  type ClaimRecord,
  type ClaimState,
} from '../db/repositories/claim.repo.js';
import { insertClient } from '../db/repositories/client.repo.js';
import { addMembers, findGroup, lockGroup, RESIDENTS } from '../db/repositories/group.repo.js';
import { consumeKeyProofNonce, findKeyThumbprintUse, holdDeviceKey, insertKeyProofNonce, setDeviceKey } from '../db/repositories/holder-key.repo.js';
import { insertMobileDevice } from '../db/repositories/mobile-device.repo.js';
import { BadRequestError, ClaimEndedError, ConflictError, NotFoundError, UnprocessableError } from '../errors.js';
import { auditEvent, recordChanges } from './audit.service.js';
import type { ActionContext, Clock } from './context.js';
import type { DomainMetrics } from './domain-metrics.js';
import type { MobileDeviceService } from './mobile-device.service.js';
import type { RevocationService } from './oauth/revoked-access-tokens.service.js';
import type { Removal } from './removal.js';
import { pruneEachTenant, sweepPeriodically } from './retention.js';
import { randomToken, sha256 } from '../shared/crypto.js';
import { holderKeyThumbprint, readHolderPublicKey } from '../shared/holder-keys.js';
import { isUuid } from '../shared/identifiers.js';
import { KEY_PROOF_MAX_AGE_MS, keyProofError, readKeyProof } from '../shared/key-proof.js';
import { decodeCursor, pageOf, type Page } from '../shared/pagination.js';
import { BOUND_CLIENT_SCOPES } from '../shared/scopes.js';
import { CLAIM_EXPIRES_IN, CLAIM_MAX_DEVICES } from '../shared/claim-limits.js';


/** The scopes of a client a claim makes: the phone downloads its own tickets and registers its own next key. */
const CLAIMED_CLIENT_SCOPES = [...new Set(['tokens:download', ...BOUND_CLIENT_SCOPES])];

/** What creates a claim (docs/api-reference.md 12); exactly one of `residentId` and `mobileDeviceId`. */
export interface NewClaim {
  residentId?: string | undefined;
  mobileDeviceId?: string | undefined;
  expiresIn?: number | undefined;
  maxDevices?: number | undefined;
  replaces?: string | undefined;
  note?: string | undefined;
}

/** A claim as the APIs show it: never its code, which only the creating answer carries. */
export interface Claim {
  id: string;
  state: ClaimState;
  expiresAt: number;
  maxDevices: number;
  /** The mobile devices it put in service, in order. */
  devices: string[];
  residentId?: string;
  mobileDeviceId?: string;
  replaces?: string;
  note?: string;
  creationDate: number;
  openedDate?: number;
  endedDate?: number;
}

/** The creating answer: the claim with its code and link, shown only here. */
export type CreatedClaim = Claim & { code: string; url: string };

/** What the phone's look-up answers (docs/api-reference.md 12). */
export interface ClaimLookup {
  tenant: string;
  residentName?: string;
  expiresAt: number;
  nonce: string;
}

/** What the phone's redemption sends. */
export interface ClaimRedemption {
  publicKey: unknown;
  proof: string;
  name?: string | undefined;
}

/** What the phone needs next: its device, its client, and where and to whom it authenticates. */
export interface RedeemedClaim {
  mobileDeviceId: string;
  clientId: string;
  tokenEndpoint: string;
  issuer: string;
}

export interface ClaimServiceOptions {
  db: Database;
  clock: Clock;
  log: Logger;
  /** PUBLIC_URL: the claim links' base, the key proofs' `aud` and the issuer a redeemed phone authenticates to. */
  publicUrl: string;
  mobileDevices: Pick<MobileDeviceService, 'removeIn'>;
  /** Revokes a device's current key when a device claim gives it a new one (holder-key.service.ts). */
  revokeKeyOfDevice: (db: Queryable, tenantId: string, mobileDeviceId: string) => Promise<void>;
  revocations: Pick<RevocationService, 'refresh'>;
  metrics: DomainMetrics;
}

/** The actor of the events the expiry sweep writes (`claim.expired`). */
const SWEEP_ACTOR = 'system:claim-expiry';

/** A claim past its expiry while still open is expired, whether or not the sweep has marked it yet. */
export function claimState(claim: Pick<ClaimRecord, 'state' | 'expiresAt'>, now: number): ClaimState {
  return (claim.state === 'created' || claim.state === 'opened') && claim.expiresAt <= now ? 'expired' : claim.state;
}

function toClaim(record: ClaimRecord, now: number): Claim {
  const state = claimState(record, now);
  const endedAt = record.endedAt ?? (state === 'expired' ? record.expiresAt : null);
  return {
    id: record.id,
    state,
    expiresAt: record.expiresAt,
    maxDevices: record.maxDevices,
    devices: record.deviceIds,
    ...(record.residentId !== null ? { residentId: record.residentId } : {}),
    ...(record.mobileDeviceId !== null ? { mobileDeviceId: record.mobileDeviceId } : {}),
    ...(record.replaces !== null ? { replaces: record.replaces } : {}),
    ...(record.note !== null ? { note: record.note } : {}),
    creationDate: record.createdAt,
    ...(record.openedAt !== null ? { openedDate: record.openedAt } : {}),
    ...(endedAt !== null ? { endedDate: endedAt } : {}),
  };
}

/** The 410 of a claim that can no longer be used, or nothing for one that can. */
function assertUsable(claim: Pick<ClaimRecord, 'state' | 'expiresAt'>, now: number): void {
  const state = claimState(claim, now);
  if (state === 'claimed' || state === 'expired' || state === 'revoked') throw new ClaimEndedError(state);
}

/** The nonce owner of a claim's key proofs: no client exists yet, so the claim stands in for it (holder-key.repo.ts). */
const nonceOwner = (claimId: string) => `claim:${claimId}`;

/** PostgreSQL 23505: a unique index refused the row (mobile_devices_key_idx: one key per device of a tenant). */
const isUniqueViolation = (error: unknown) => Boolean(error && typeof error === 'object' && (error as { code?: unknown }).code === '23505');

export function createClaimService(options: ClaimServiceOptions) {
  const { db, clock, log, publicUrl, metrics } = options;
  const base = publicUrl.replace(/\/+$/, '');
  let stopSweeping: (() => void) | null = null;

  const notFound = (id: string) => new NotFoundError(`No claim ${id}.`);

  async function current(tenantId: string, id: string): Promise<ClaimRecord> {
    const claim = isUuid(id) ? await findClaim(db, tenantId, id) : null;
    if (!claim) throw notFound(id);
    return claim;
  }

  /** The claim of the code, found by its hash alone (claim.repo.ts findClaimByCode); 404 for an unknown code. */
  async function byCode(code: string) {
    const found = await findClaimByCode(db, sha256(code));
    if (!found) throw new NotFoundError('No such claim. Check the link, or ask for a new one.');
    return found;
  }

  return {
    /**
     * POST /v1/residents/{id}/claims and POST /operatorapi/claims: a claim for a resident or for one device. 404 for an
     * unknown resident on the Access API's path (`residentPath`), 422 for unknown or inconsistent fields otherwise.
     */
    async create(context: ActionContext, input: NewClaim, residentPath = false): Promise<CreatedClaim> {
      const { residentId, mobileDeviceId, replaces } = input;
      if ((residentId === undefined) === (mobileDeviceId === undefined)) {
        throw new UnprocessableError('A claim is for a resident (residentId) or for one mobile device (mobileDeviceId): name exactly one.', [
          { field: residentId === undefined ? 'residentId' : 'mobileDeviceId', message: 'name exactly one of residentId and mobileDeviceId' },
        ]);
      }
      const maxDevices = input.maxDevices ?? CLAIM_MAX_DEVICES.default;
      if (mobileDeviceId !== undefined && maxDevices !== 1) {
        throw new UnprocessableError('A claim for one mobile device enrols one phone: maxDevices must be 1.', [
          { field: 'maxDevices', message: 'must be 1 for a claim for one mobile device' },
        ]);
      }
      if (mobileDeviceId !== undefined && replaces !== undefined) {
        throw new UnprocessableError('replaces names a device of the resident the claim is for: only a claim for a resident replaces one.', [
          { field: 'replaces', message: 'only with residentId' },
        ]);
      }
      const code = randomToken(32);
      const now = clock();
      const record: ClaimRecord = {
        tenantId: context.tenantId,
        id: randomUUID(),
        codeHash: sha256(code),
        residentId: residentId ?? null,
        mobileDeviceId: mobileDeviceId ?? null,
        replaces: replaces ?? null,
        note: input.note ?? null,
        maxDevices,
        state: 'created',
        deviceIds: [],
        createdAt: now,
        expiresAt: now + (input.expiresIn ?? CLAIM_EXPIRES_IN.default) * 1000,
        openedAt: null,
        endedAt: null,
      };
      await db.transaction(async (tx) => {
        if (residentId !== undefined) {
          // Held until commit, so the resident cannot be deleted behind the claim's back (its claims go with it).
          if (!isUuid(residentId) || !(await lockGroup(tx, RESIDENTS, context.tenantId, residentId, 'SHARE'))) {
            if (residentPath) throw new NotFoundError(`No resident ${residentId}.`);
            throw new UnprocessableError(`No resident ${residentId} in this tenant.`, [{ field: 'residentId', message: 'no such resident' }]);
          }
          if (replaces !== undefined && !(await isResidentDevice(tx, context.tenantId, residentId, replaces))) {
            throw new UnprocessableError(`The mobile device ${replaces} is not a device of resident ${residentId}.`, [
              { field: 'replaces', message: 'not a mobile device of this resident' },
            ]);
          }
        } else if (!(await holdDeviceKey(tx, context.tenantId, mobileDeviceId!))) {
          throw new UnprocessableError(`No mobile device ${mobileDeviceId} in this tenant.`, [{ field: 'mobileDeviceId', message: 'no such mobile device' }]);
        }
        await insertClaim(tx, record);
        await recordChanges(tx, [
          auditEvent(context, now, 'claim.created', `claim:${record.id}`, {
            claimId: record.id,
            ...(residentId !== undefined ? { residentId } : { mobileDeviceId }),
            ...(replaces !== undefined ? { replaces } : {}),
          }),
        ]);
      });
      return { ...toClaim(record, now), code, url: `${base}/claim#${code}` };
    },

    async get(tenantId: string, id: string): Promise<Claim> {
      return toClaim(await current(tenantId, id), clock());
    },

    /** A page of the tenant's claims, oldest first; the Access API's path names the resident and 404s for an unknown one. */
    async list(tenantId: string, filter: ClaimFilter, limit: number, cursor?: string): Promise<Page<Claim>> {
      if (filter.residentId !== undefined && !isUuid(filter.residentId)) return { items: [], nextCursor: null };
      const rows = await listClaims(db, tenantId, filter, decodeCursor(cursor, isUuid), limit + 1);
      const now = clock();
      return pageOf(rows, limit, (row) => ({ createdAt: row.createdAt, id: row.id }), (row) => toClaim(row, now));
    },

    /** The claims of a resident of the tenant; 404 when the tenant has no such resident. */
    async listOfResident(tenantId: string, residentId: string, limit: number, cursor?: string): Promise<Page<Claim>> {
      if (!isUuid(residentId) || !(await findGroup(db, RESIDENTS, tenantId, residentId))) {
        throw new NotFoundError(`No resident ${residentId}.`);
      }
      return this.list(tenantId, { residentId }, limit, cursor);
    },

    /** DELETE: the claim stops working at once (`revoked`); 409 for one already claimed, expired or revoked. */
    async revoke(context: ActionContext, id: string): Promise<void> {
      if (!isUuid(id)) throw notFound(id);
      await db.transaction(async (tx) => {
        const claim = await holdClaim(tx, context.tenantId, id);
        if (!claim) throw notFound(id);
        const now = clock();
        const state = claimState(claim, now);
        if (state !== 'created' && state !== 'opened') throw new ConflictError(`The claim ${id} is ${state} already.`);
        await endClaim(tx, context.tenantId, id, 'revoked', now);
        await recordChanges(tx, [auditEvent(context, now, 'claim.revoked', `claim:${id}`, { claimId: id })]);
      });
    },

    /**
     * GET /deviceapi/claims/{code}: what the phone shows before it enrols, and a nonce for its key proof (single use,
     * 5 minutes). The first look-up marks the claim `opened`.
     */
    async lookup(code: string, requestId: string | null): Promise<ClaimLookup> {
      const { claim, tenantName, residentName } = await byCode(code);
      const now = clock();
      assertUsable(claim, now);
      if (claim.state === 'created') {
        await db.transaction(async (tx) => {
          if (!(await markClaimOpened(tx, claim.tenantId, claim.id, now))) return;
          const context = { tenantId: claim.tenantId, actor: nonceOwner(claim.id), requestId };
          await recordChanges(tx, [auditEvent(context, now, 'claim.opened', `claim:${claim.id}`, { claimId: claim.id })]);
        });
      }
      const nonce = randomBytes(16).toString('base64url');
      await insertKeyProofNonce(db, claim.tenantId, nonce, nonceOwner(claim.id), now + KEY_PROOF_MAX_AGE_MS);
      return { tenant: tenantName, ...(residentName !== null ? { residentName } : {}), expiresAt: claim.expiresAt, nonce };
    },

    /**
     * POST /deviceapi/claims/{code}: in one transaction, the phone's device (new in the resident, or the claim's own) with
     * its key, a bound client without a secret, the resident's tickets for it, and the replaced device removed. The
     * claim row is held throughout, so concurrent redemptions never enrol more than `maxDevices`.
     */
    async redeem(code: string, requestId: string | null, redemption: ClaimRedemption): Promise<RedeemedClaim> {
      const { claim: found } = await byCode(code);
      assertUsable(found, clock());
      const { tenantId } = found;
      const reading = readHolderPublicKey(redemption.publicKey);
      if ('error' in reading) {
        const errors = [{ field: 'publicKey', message: reading.error }];
        // docs/api-reference.md 11.1: a private member is well-formed but must never be sent.
        if (typeof redemption.publicKey === 'object' && redemption.publicKey !== null && Object.hasOwn(redemption.publicKey, 'd')) {
          throw new UnprocessableError(reading.error, errors);
        }
        throw new BadRequestError(reading.error, errors);
      }
      const proof = readKeyProof(redemption.proof);
      if ('error' in proof) throw new BadRequestError(proof.error, [{ field: 'proof', message: proof.error }]);
      // Spent before the signature is checked, so a proof that fails spends it too: each nonce gets one try.
      const nonceExpiresAt = await consumeKeyProofNonce(db, tenantId, proof.nonce, nonceOwner(found.id));
      const now = clock();
      const nonceError =
        nonceExpiresAt === null
          ? 'proof nonce is unknown, used already or was issued for another claim: look the claim up again for a new one'
          : nonceExpiresAt <= now
            ? 'proof nonce expired (nonces last 5 minutes): look the claim up again for a new one'
            : keyProofError(proof.proof, reading.keyObject, publicUrl, now);
      if (nonceError !== null) throw new BadRequestError(nonceError, [{ field: 'proof', message: nonceError }]);
      const key = reading.key;
      const keyThumbprint = holderKeyThumbprint(key);

      const context: ActionContext = { tenantId, actor: nonceOwner(found.id), requestId };
      let outcome: { mobileDeviceId: string; clientId: string; issued: number; removal: Removal | null };
      try {
        outcome = await db.transaction(async (tx) => {
          // LOCK ORDER: the tenant's change counter (change-log.repo.ts), the claim, the resident, the replaced device
          // and its clients and tickets (removal.ts), the new rows, the event counter last (audit.repo.ts).
          const seq = await nextChangeSeq(tx, tenantId);
          const claim = await holdClaim(tx, tenantId, found.id);
          if (!claim) throw new NotFoundError('No such claim. Check the link, or ask for a new one.');
          const at = clock();
          assertUsable(claim, at);
          const events: AuditEventInput[] = [];
          let mobileDeviceId: string;
          let removal: Removal | null = null;
          let issued = 0;
          if (claim.residentId !== null) {
            if (!(await lockGroup(tx, RESIDENTS, tenantId, claim.residentId, 'UPDATE'))) throw new ClaimEndedError('revoked');
            await refuseUsedKey(tx, tenantId, keyThumbprint, undefined);
            // The replaced phone goes with the first redemption, while it is still the resident's.
            if (claim.replaces !== null && claim.deviceIds.length === 0 && (await isResidentDevice(tx, tenantId, claim.residentId, claim.replaces))) {
              removal = await options.mobileDevices.removeIn(tx, context, claim.replaces, seq);
            }
            mobileDeviceId = randomUUID();
            await insertMobileDevice(tx, {
              tenantId,
              id: mobileDeviceId,
              name: redemption.name ?? null,
              createdAt: at,
              keyThumbprint: null,
              keyRegisteredAt: null,
            });
            await setDeviceKey(tx, tenantId, mobileDeviceId, { publicKey: key, keyThumbprint, registeredAt: at });
            await addMembers(tx, RESIDENTS, tenantId, claim.residentId, [mobileDeviceId]);
          } else {
            mobileDeviceId = claim.mobileDeviceId!;
            await refuseUsedKey(tx, tenantId, keyThumbprint, mobileDeviceId);
            // The device's key before this one, if any, is revoked at every lock (docs/api-reference.md 11.4).
            await options.revokeKeyOfDevice(tx, tenantId, mobileDeviceId);
            await setDeviceKey(tx, tenantId, mobileDeviceId, { publicKey: key, keyThumbprint, registeredAt: at });
          }
          const clientId = randomToken(16);
          await insertClient(tx, {
            clientId,
            tenantId,
            name: redemption.name ?? `Phone enrolled by claim ${claim.id}`,
            secretHash: null,
            // No redirect URI: not a public client (docs/api-reference.md 13), so client_id alone never authenticates it.
            redirectUri: null,
            scopes: CLAIMED_CLIENT_SCOPES,
            mobileDeviceId,
            securedObjectId: null,
            createdAt: at,
          });
          if (claim.residentId !== null) {
            const membership = `resident:${claim.residentId}/mobile_device:${mobileDeviceId}`;
            const data = { residentId: claim.residentId, mobileDeviceId };
            // The tickets' events in chunks, in the statement that makes them (it takes the event counter).
            issued = await issueForNewMembers(tx, RESIDENTS, tenantId, claim.residentId, [mobileDeviceId], at, seq, { ...context, target: membership, data });
            events.push(
              auditEvent(context, at, 'mobile_device.created', `mobile_device:${mobileDeviceId}`, { mobileDeviceId }),
              auditEvent(context, at, 'resident.device_added', membership, data),
            );
          }
          const claimed = claim.deviceIds.length + 1 >= claim.maxDevices;
          await recordClaimedDevice(tx, tenantId, claim.id, mobileDeviceId, claimed, at);
          await recordChanges(tx, [
            ...(removal?.events ?? []),
            ...events,
            auditEvent(context, at, 'mobile_device.key_registered', `mobile_device:${mobileDeviceId}`, { mobileDeviceId, keyThumbprint }),
            auditEvent(context, at, 'client.created', `client:${clientId}`, { clientId }),
            ...(claimed
              ? [auditEvent(context, at, 'claim.claimed', `claim:${claim.id}`, { claimId: claim.id, mobileDeviceIds: [...claim.deviceIds, mobileDeviceId] })]
              : []),
          ]);
          return { mobileDeviceId, clientId, issued, removal };
        });
      } catch (error) {
        // Another phone registered the same key meanwhile (mobile_devices_key_idx).
        if (isUniqueViolation(error)) throw new ConflictError('This key is registered to another mobile device: make a new key pair.');
        throw error;
      }
      metrics.ticketsCreated(outcome.issued);
      if (outcome.removal) {
        metrics.ticketsRevoked(outcome.removal.revoked);
        if (outcome.removal.clientIds.length > 0) await options.revocations.refresh();
      }
      return { mobileDeviceId: outcome.mobileDeviceId, clientId: outcome.clientId, tokenEndpoint: `${base}/oauth/token`, issuer: publicUrl };
    },

    /**
     * The sweep: every tenant's claims that ran out while open become `expired`, each with its `claim.expired` event in
     * the same transaction, in bounded batches per tenant; answers how many.
     */
    async expire(): Promise<number> {
      const now = clock();
      return pruneEachTenant(db, (tenantId, limit) =>
        db.transaction(async (tx) => {
          const ids = await expireClaims(tx, tenantId, now, limit);
          if (ids.length > 0) {
            const context = { tenantId, actor: SWEEP_ACTOR, requestId: null };
            await recordChanges(tx, ids.map((id) => auditEvent(context, now, 'claim.expired', `claim:${id}`, { claimId: id })));
          }
          return ids.length;
        }),
      );
    },

    start(): void {
      stopSweeping ??= sweepPeriodically(() => this.expire(), log, 'claim expiry');
    },

    stop(): void {
      stopSweeping?.();
      stopSweeping = null;
    },
  };
}

/** 409 for a key another device or lock of the tenant holds, or a revoked one (as a key registration, 11.1). */
async function refuseUsedKey(tx: Queryable, tenantId: string, keyThumbprint: string, mobileDeviceId: string | undefined): Promise<void> {
  const use = await findKeyThumbprintUse(tx, tenantId, keyThumbprint, mobileDeviceId === undefined ? {} : { mobileDeviceId });
  if (use === 'revoked') throw new ConflictError('This key was revoked: make a new key pair and send its public key.');
  if (use !== null) throw new ConflictError(`This key is registered to another ${use === 'lock' ? 'secured object' : 'mobile device'}: make a new key pair.`);
}

export type ClaimService = ReturnType<typeof createClaimService>;
