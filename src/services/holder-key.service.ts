// The phone's and the lock's own keys (docs/api-reference.md 11.1, 11.4): key-proof nonces, registering a key with a
// proof of possession, removing a lock's key, revoking a phone's key so that every lock learns it.
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Database, Queryable } from '../db/database.js';
import { nextChangeSeq } from '../db/repositories/change-log.repo.js';
import {
  clearLockKey,
  consumeKeyProofNonce,
  findKeyThumbprintUse,
  holdDeviceKey,
  insertDeviceKeyRevocation,
  insertKeyProofNonce,
  pruneKeyProofNonces,
  pruneRevokedDeviceKeys,
  setDeviceKey,
  setLockKeyIfNone,
  type HeldDeviceKey,
} from '../db/repositories/holder-key.repo.js';
import { findLockForClient } from '../db/repositories/lock-sync.repo.js';
import { BadRequestError, ConflictError, ForbiddenError, NotFoundError, UnprocessableError } from '../errors.js';
import { auditEvent, recordChanges } from './audit.service.js';
import type { ActionContext, Clock } from './context.js';
import { pruneEachTenant, sweepPeriodically } from './retention.js';
import { assertBinding, assertLockClientActive, type DeviceBinding } from '../shared/device-binding.js';
import { holderKeyThumbprint, readHolderPublicKey, type HolderPublicKey } from '../shared/holder-keys.js';
import { KEY_PROOF_MAX_AGE_MS, keyProofError, readKeyProof } from '../shared/key-proof.js';

/** What a key registration sends (docs/api-reference.md 11.1). */
export interface KeyRegistration {
  publicKey: unknown;
  proof: string;
}

/** A registered key as the registration answers it. */
export interface RegisteredKey {
  keyThumbprint: string;
  keyRegisteredTime: number;
}

export interface HolderKeyServiceOptions {
  db: Database;
  clock: Clock;
  log: Logger;
  /** PUBLIC_URL: the `aud` of every key proof (docs/api-reference.md 11.1). */
  audience: string;
  /**
   * CREDENTIAL_MAX_LIFETIME in ms: a revoked key is kept that long past its last bound credential's expiry, the most a
   * lock's clock may run behind (lock-telemetry.repo.ts CLOCK_MARGIN_SQL), then pruned.
   */
  credentialLifetimeMs: number;
}

const DEVICE_KEY_NEEDS_BINDING =
  'A phone registers its key with the client bound to it (POST /operatorapi/oauthclients with mobileDeviceId).';
const LOCK_KEY_NEEDS_BINDING =
  'A lock\'s key is registered with the client bound to it (POST /operatorapi/oauthclients with securedObjectId).';
const NONCE_NEEDS_BINDING = 'Key-proof nonces are for clients bound to a mobile device or a secured object.';

/** A JWK carrying `d`, the private scalar of an EC key (RFC 7518 6.2.2.1). */
const hasPrivateMember = (value: unknown) => typeof value === 'object' && value !== null && Object.hasOwn(value, 'd');

/** PostgreSQL 23505: a unique index refused the row (mobile_devices_key_idx: one key per device of a tenant). */
const isUniqueViolation = (error: unknown) => Boolean(error && typeof error === 'object' && (error as { code?: unknown }).code === '23505');

export function createHolderKeyService({ db, clock, log, audience, credentialLifetimeMs }: HolderKeyServiceOptions) {
  let stopSweeping: (() => void) | null = null;

  /**
   * The key and its proof checked, the nonce used up: 400 for a proof that does not show possession of this key for
   * this service now, 422 for a private member. The nonce is consumed before the signature is checked, so a proof
   * that fails still spends it: each nonce gets one try.
   */
  async function checkedKey(tenantId: string, clientId: string, registration: KeyRegistration): Promise<{ key: HolderPublicKey; keyThumbprint: string }> {
    const reading = readHolderPublicKey(registration.publicKey);
    if ('error' in reading) {
      const errors = [{ field: 'publicKey', message: reading.error }];
      // docs/api-reference.md 11.1: a private member is well-formed but must never be sent.
      if (hasPrivateMember(registration.publicKey)) throw new UnprocessableError(reading.error, errors);
      throw new BadRequestError(reading.error, errors);
    }
    const proof = readKeyProof(registration.proof);
    if ('error' in proof) throw new BadRequestError(proof.error, [{ field: 'proof', message: proof.error }]);
    const now = clock();
    const expiresAt = await consumeKeyProofNonce(db, tenantId, proof.nonce, clientId);
    const nonceError =
      expiresAt === null
        ? 'proof nonce is unknown, used already or was issued to another client: ask POST /deviceapi/nonces for a new one'
        : expiresAt <= now
          ? 'proof nonce expired (nonces last 5 minutes): ask POST /deviceapi/nonces for a new one'
          : keyProofError(proof.proof, reading.keyObject, audience, now);
    if (nonceError !== null) throw new BadRequestError(nonceError, [{ field: 'proof', message: nonceError }]);
    return { key: reading.key, keyThumbprint: holderKeyThumbprint(reading.key) };
  }

  /**
   * docs/api-reference.md 11.4: the held key goes on every lock's revocation data while a credential bound to it may
   * be alive; a key never bound to a credential still alive needs no entry. The revocation takes a change number of
   * its own, so a sync answer cut inside a ticket change number never splits it (lock-sync.service.ts).
   */
  async function revokeHeldKey(tx: Queryable, tenantId: string, mobileDeviceId: string, held: HeldDeviceKey, now: number, seq: number): Promise<boolean> {
    if (held.keyThumbprint === null || held.keyBoundUntil === null || held.keyBoundUntil <= now) return false;
    await insertDeviceKeyRevocation(tx, tenantId, {
      keyThumbprint: held.keyThumbprint,
      mobileDeviceId,
      revokedAt: now,
      boundUntil: held.keyBoundUntil,
      changeSeq: seq,
    });
    return true;
  }

  async function conflictIfUsed(tx: Queryable, tenantId: string, keyThumbprint: string, self: { mobileDeviceId?: string; securedObjectId?: string }): Promise<void> {
    const use = await findKeyThumbprintUse(tx, tenantId, keyThumbprint, self);
    if (use === 'revoked') throw new ConflictError('This key was revoked: make a new key pair and register its public key.');
    if (use !== null) throw new ConflictError(`This key is registered to another ${use === 'lock' ? 'secured object' : 'mobile device'}: make a new key pair.`);
  }

  return {
    /** docs/api-reference.md 11.1: a single-use nonce for one key proof by this client, valid 5 minutes. */
    async issueNonce(tenantId: string, binding: DeviceBinding): Promise<{ nonce: string }> {
      if (binding.mobileDeviceId === undefined && binding.securedObjectId === undefined) throw new ForbiddenError(NONCE_NEEDS_BINDING);
      const nonce = randomBytes(16).toString('base64url');
      await insertKeyProofNonce(db, tenantId, nonce, binding.clientId, clock() + KEY_PROOF_MAX_AGE_MS);
      return { nonce };
    },

    /**
     * PUT /deviceapi/mobiledevices/{id}/key (docs/api-reference.md 11.1): the device's bound client registers its key.
     * A new key replaces the old one, which is revoked (11.4) in the same transaction; the same key again changes nothing.
     */
    async registerDeviceKey(context: ActionContext, binding: DeviceBinding, mobileDeviceId: string, registration: KeyRegistration): Promise<RegisteredKey> {
      assertBinding(binding, 'mobileDeviceId', mobileDeviceId, DEVICE_KEY_NEEDS_BINDING);
      const { key, keyThumbprint } = await checkedKey(context.tenantId, binding.clientId, registration);
      try {
        return await db.transaction(async (tx) => {
          // LOCK ORDER: the tenant's change counter first (change-log.repo.ts), then the device row.
          const seq = await nextChangeSeq(tx, context.tenantId);
          const held = await holdDeviceKey(tx, context.tenantId, mobileDeviceId);
          if (!held) throw new NotFoundError(`No mobile device ${mobileDeviceId}.`);
          if (held.keyThumbprint === keyThumbprint) return { keyThumbprint, keyRegisteredTime: held.keyRegisteredAt! };
          await conflictIfUsed(tx, context.tenantId, keyThumbprint, { mobileDeviceId });
          const now = clock();
          const revoked = await revokeHeldKey(tx, context.tenantId, mobileDeviceId, held, now, seq);
          await setDeviceKey(tx, context.tenantId, mobileDeviceId, { publicKey: key, keyThumbprint, registeredAt: now });
          const target = `mobile_device:${mobileDeviceId}`;
          await recordChanges(tx, [
            ...(held.keyThumbprint !== null
              ? [auditEvent(context, now, 'mobile_device.key_revoked', target, { mobileDeviceId, keyThumbprint: held.keyThumbprint, onLocks: revoked })]
              : []),
            auditEvent(context, now, 'mobile_device.key_registered', target, { mobileDeviceId, keyThumbprint }),
          ]);
          return { keyThumbprint, keyRegisteredTime: now };
        });
      } catch (error) {
        // Another device of the tenant registered the same key meanwhile (mobile_devices_key_idx).
        if (isUniqueViolation(error)) throw new ConflictError('This key is registered to another mobile device: make a new key pair.');
        throw error;
      }
    },

    /**
     * PUT /deviceapi/securedobjects/{id}/key (docs/api-reference.md 11.1): the lock's bound client registers the key the
     * lock made at provisioning, only while it has none. Replacing it takes the operator's DELETE, so a stolen lock
     * client cannot swap the lock's identity; the same key again changes nothing.
     */
    async registerLockKey(context: ActionContext, binding: DeviceBinding, securedObjectId: string, registration: KeyRegistration): Promise<RegisteredKey> {
      assertBinding(binding, 'securedObjectId', securedObjectId, LOCK_KEY_NEEDS_BINDING);
      assertLockClientActive(await findLockForClient(db, context.tenantId, securedObjectId, binding.clientId), securedObjectId);
      const { key, keyThumbprint } = await checkedKey(context.tenantId, binding.clientId, registration);
      return db.transaction(async (tx) => {
        const now = clock();
        await conflictIfUsed(tx, context.tenantId, keyThumbprint, { securedObjectId });
        const result = await setLockKeyIfNone(tx, context.tenantId, securedObjectId, { publicKey: key, keyThumbprint, registeredAt: now });
        if (result.outcome === 'missing') throw new NotFoundError(`No secured object ${securedObjectId}.`);
        if (result.outcome === 'taken') {
          if (result.keyThumbprint === keyThumbprint) return { keyThumbprint, keyRegisteredTime: result.registeredAt! };
          throw new ConflictError(
            `The secured object ${securedObjectId} has a key already. An operator removes it first ` +
              `(DELETE /operatorapi/securedobjects/${securedObjectId}/key, devices:write); then register the new one.`,
          );
        }
        await recordChanges(tx, [
          auditEvent(context, now, 'secured_object.key_registered', `secured_object:${securedObjectId}`, { securedObjectId, keyThumbprint }),
        ]);
        return { keyThumbprint, keyRegisteredTime: now };
      });
    },

    /** DELETE /operatorapi/securedobjects/{id}/key (docs/api-reference.md 11.1): lets the lock's client register a new key. */
    async removeLockKey(context: ActionContext, securedObjectId: string): Promise<void> {
      await db.transaction(async (tx) => {
        const old = await clearLockKey(tx, context.tenantId, securedObjectId);
        if (old === null) throw new NotFoundError(`No secured object ${securedObjectId}.`);
        if (old === 'none') throw new NotFoundError(`The secured object ${securedObjectId} has no key.`);
        await recordChanges(tx, [
          auditEvent(context, clock(), 'secured_object.key_removed', `secured_object:${securedObjectId}`, { securedObjectId, keyThumbprint: old }),
        ]);
      });
    },

    /** DELETE /operatorapi/mobiledevices/{id}/key (docs/api-reference.md 11.4): the phone's key is revoked at every lock. */
    async revokeDeviceKey(context: ActionContext, mobileDeviceId: string): Promise<void> {
      await db.transaction(async (tx) => {
        const seq = await nextChangeSeq(tx, context.tenantId);
        const held = await holdDeviceKey(tx, context.tenantId, mobileDeviceId);
        if (!held) throw new NotFoundError(`No mobile device ${mobileDeviceId}.`);
        if (held.keyThumbprint === null) throw new NotFoundError(`The mobile device ${mobileDeviceId} has no key.`);
        const now = clock();
        const revoked = await revokeHeldKey(tx, context.tenantId, mobileDeviceId, held, now, seq);
        await setDeviceKey(tx, context.tenantId, mobileDeviceId, null);
        await recordChanges(tx, [
          auditEvent(context, now, 'mobile_device.key_revoked', `mobile_device:${mobileDeviceId}`, {
            mobileDeviceId,
            keyThumbprint: held.keyThumbprint,
            onLocks: revoked,
          }),
        ]);
      });
    },

    /**
     * docs/api-reference.md 11.4: a device being removed (removal.ts) takes its key with it, revoked at every lock.
     * Called in the removal's transaction after its change number, before the device row goes.
     */
    async revokeKeyOfRemovedDevice(tx: Queryable, tenantId: string, mobileDeviceId: string): Promise<void> {
      const held = await holdDeviceKey(tx, tenantId, mobileDeviceId);
      const now = clock();
      if (!held || held.keyThumbprint === null || held.keyBoundUntil === null || held.keyBoundUntil <= now) return;
      // A number of its own: the removal's number is its tickets' (revokeHeldKey).
      await revokeHeldKey(tx, tenantId, mobileDeviceId, held, now, await nextChangeSeq(tx, tenantId));
    },

    /**
     * Retention: every tenant's expired nonces, and the key revocations no lock needs any more (their last bound
     * credential expired one lifetime ago, the most a lock's clock may lag), in bounded batches per tenant.
     */
    async prune(): Promise<number> {
      const now = clock();
      return (
        (await pruneEachTenant(db, (tenantId, limit) => pruneKeyProofNonces(db, tenantId, now, limit))) +
        (await pruneEachTenant(db, (tenantId, limit) => pruneRevokedDeviceKeys(db, tenantId, now - credentialLifetimeMs, limit)))
      );
    },

    start(): void {
      stopSweeping ??= sweepPeriodically(() => this.prune(), log, 'key-proof nonce');
    },

    stop(): void {
      stopSweeping?.();
      stopSweeping = null;
    },
  };
}

export type HolderKeyService = ReturnType<typeof createHolderKeyService>;
