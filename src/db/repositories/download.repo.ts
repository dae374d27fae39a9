// SQL for what a phone downloads and holds (docs/api-reference.md 6.1, 8.2, 8.3): a device's valid tickets with the
// credentials stored for them and their download stamp, the revocation lists of their locks, and the tickets explain judges.
import type { Queryable } from '../database.js';
import { keysetPage, type KeysetPosition } from '../../shared/keyset.js';
import { appendAuditEvents } from './audit.repo.js';
import { HOLDER_BINDING_SQL, LOCK_SERIAL_SQL, LOCK_STATE_MODE_SQL, LOCK_STATE_SEQ_SQL } from './change-log.repo.js';
import type { HolderBinding } from '../../shared/holder-binding.js';
import type { HolderPublicKey } from '../../shared/holder-keys.js';
import { CLOCK_MARGIN_SQL } from './lock-telemetry.repo.js';
import { TICKET_COLUMNS, TICKET_KEYSET, toTicketRecord, type TicketRecord, type TicketRow } from './ticket.repo.js';

/** A ticket with the credential last handed out for it, still sealed (docs/security-cases.md G48). */
export interface CredentialedTicket extends TicketRecord {
  /** Its lock's time zone, which its schedule is read in when a credential is signed (docs/api-reference.md 9). */
  lockTimeZone: string;
  /**
   * `kid` null: the credential is still what the phone holds (the explain judges it) but must be signed anew on the
   * next download, as its windows are of a zone its lock no longer has (forgetScheduledCredentials).
   */
  credential: { sealed: Buffer; kid: string | null; issuedAt: number; expiresAt: number } | null;
  /** The thumbprint of the device's key, which its credentials are bound to (`cnf.jkt`, docs/api-reference.md 11.2). */
  deviceKeyThumbprint: string | null;
  /** The lock's own public key, which a download hands out as `lockKey` (docs/api-reference.md 11.2). */
  lockPublicKey: HolderPublicKey | null;
}

interface CredentialColumns {
  lock_time_zone: string;
  device_key_thumbprint: string | null;
  lock_public_key: HolderPublicKey | string | null;
  credential_encrypted: Buffer | Uint8Array | null;
  credential_kid: string | null;
  credential_issued_at: number | null;
  credential_expires_at: number | null;
}

const CREDENTIAL_COLUMNS = 'credential_encrypted, credential_kid, credential_issued_at, credential_expires_at';

/**
 * The zone of the ticket's lock (`tickets` named `alias`), by its primary key. UTC when the lock is gone: its tickets
 * are revoked with it, so no credential is signed from that value. The subqueries here name the tenant by its
 * placeholder, not the outer row's column, so a cluster sharded by tenant plans the statement on one node
 * (docs/house-style.md convention 6).
 */
const LOCK_TIME_ZONE = (tenantPlaceholder: string, alias: string) =>
  `coalesce((SELECT so.time_zone FROM secured_objects so
              WHERE so.tenant_id = ${tenantPlaceholder} AND so.id = ${alias}.secured_object_id), 'UTC') AS lock_time_zone`;

/**
 * The thumbprint of the ticket's device's key and its lock's public key (docs/api-reference.md 11.2), by primary key:
 * read with the tickets, so a download of 500 tickets binds and carries them without a query per ticket.
 */
const HOLDER_KEYS = (tenantPlaceholder: string, alias: string) =>
  `(SELECT md.key_thumbprint FROM mobile_devices md
     WHERE md.tenant_id = ${tenantPlaceholder} AND md.id = ${alias}.mobile_device_id) AS device_key_thumbprint,
   (SELECT so.public_key FROM secured_objects so
     WHERE so.tenant_id = ${tenantPlaceholder} AND so.id = ${alias}.secured_object_id) AS lock_public_key`;

const toCredentialed = (row: TicketRow & CredentialColumns): CredentialedTicket => ({
  ...toTicketRecord(row),
  lockTimeZone: row.lock_time_zone,
  deviceKeyThumbprint: row.device_key_thumbprint,
  lockPublicKey: typeof row.lock_public_key === 'string' ? (JSON.parse(row.lock_public_key) as HolderPublicKey) : row.lock_public_key,
  credential:
    row.credential_encrypted === null
      ? null
      : {
          sealed: Buffer.from(row.credential_encrypted),
          kid: row.credential_kid,
          issuedAt: row.credential_issued_at!,
          expiresAt: row.credential_expires_at!,
        },
});

/** A credential signed by this download, sealed, to store. */
export interface NewCredential {
  sealed: Buffer;
  kid: string;
  issuedAt: number;
  expiresAt: number;
}

/** A device's VALID tickets (not revoked, not expired) in creation order, with any cached credential. */
export async function listValidTicketsOfDevice(
  db: Queryable,
  tenantId: string,
  mobileDeviceId: string,
  now: number,
  after: KeysetPosition | null,
  limit: number,
): Promise<CredentialedTicket[]> {
  const params: unknown[] = [tenantId, mobileDeviceId, now];
  const page = keysetPage(params, TICKET_KEYSET, after, limit);
  const { rows } = await db.query<TicketRow & CredentialColumns>(
    `SELECT ${TICKET_COLUMNS}, ${CREDENTIAL_COLUMNS}, ${LOCK_TIME_ZONE('$1', 'tickets')}, ${HOLDER_KEYS('$1', 'tickets')} FROM tickets
      WHERE tenant_id = $1 AND mobile_device_id = $2 AND revoked_at IS NULL AND end_date > $3 AND ${page.condition}
      ${page.orderAndLimit}`,
    params,
  );
  return rows.map(toCredentialed);
}

/**
 * Stores the credentials signed now (null: the stored one was handed out again) and sets `downloadDate` on first
 * download, appending one `ticket.downloaded` audit event per ticket downloaded for the first time. In the caller's
 * transaction, in statements that each touch the tenant's rows alone (docs/house-style.md convention 6): the devices
 * locked, their key's bound raised, the tickets locked (in id order), the tickets written, then their events. The
 * rows are locked first, so of two concurrent downloads exactly one stamps each ticket. `credential_expires_at` only rises:
 * it bounds how long the lock needs a revocation of the ticket (docs/api-reference.md 8.2), so it must cover every
 * credential ever handed out. Returns each ticket's download stamp; a ticket removed or revoked meanwhile is absent
 * and its credential must not be handed out: its revocation may already have passed the lock's sync while the
 * ticket had no credential (docs/api-reference.md 8.2 sends revocations only of tickets with one), so the lock would never
 * learn it. The row lock orders this against a concurrent revocation: one that commits first is seen here (READ
 * COMMITTED re-reads the locked row); one that commits after sees the stored expiry and reaches the lock.
 */
export async function recordDownload(
  tx: Queryable,
  tenantId: string,
  ticketIds: string[],
  credentials: (NewCredential | null)[],
  now: number,
  audit: { actor: string; requestId: string | null },
  devices: DownloadedDevice[],
): Promise<Map<string, number>> {
  if (ticketIds.length === 0) return new Map();
  // docs/api-reference.md 11.2, 11.4: the devices whose key is still the one the credentials were bound to, their rows
  // locked before the tickets' (the order a device's removal takes). A key registered or revoked meanwhile leaves its
  // device out: nothing bound to the old key is handed out, since its revocation may already have passed the locks'
  // syncs with a shorter bound.
  const { rows: current } = await tx.query<{ id: string }>(
    `SELECT md.id FROM mobile_devices md
       JOIN unnest($2::text[], $3::text[]) AS d (id, jkt) ON md.id = d.id
      WHERE md.tenant_id = $1 AND md.key_thumbprint IS NOT DISTINCT FROM d.jkt
      ORDER BY md.id
        FOR NO KEY UPDATE OF md`,
    [tenantId, devices.map((device) => device.mobileDeviceId), devices.map((device) => device.keyThumbprint)],
  );
  const deviceIds = current.map((row) => row.id);
  if (deviceIds.length === 0) return new Map();
  const bound = devices.filter((device) => device.keyThumbprint !== null && device.boundUntil > 0 && deviceIds.includes(device.mobileDeviceId));
  if (bound.length > 0) {
    // The key's revocation must reach the locks until the last credential bound to it expires (migration 020).
    await tx.query(
      `UPDATE mobile_devices md SET key_bound_until = d.bound_until
         FROM unnest($2::text[], $3::text[], $4::bigint[]) AS d (id, jkt, bound_until)
        WHERE md.tenant_id = $1 AND md.id = d.id AND md.key_thumbprint = d.jkt AND d.bound_until > coalesce(md.key_bound_until, 0)`,
      [tenantId, bound.map((device) => device.mobileDeviceId), bound.map((device) => device.keyThumbprint), bound.map((device) => device.boundUntil)],
    );
  }
  const { rows: before } = await tx.query<{ id: string; downloaded_at: number | null; mobile_device_id: string; secured_object_id: string }>(
    `SELECT id, downloaded_at, mobile_device_id, secured_object_id FROM tickets
      WHERE tenant_id = $1 AND id = ANY ($2::uuid[]) AND revoked_at IS NULL AND mobile_device_id = ANY ($3::text[])
      ORDER BY id
        FOR UPDATE`,
    [tenantId, ticketIds, deviceIds],
  );
  if (before.length === 0) return new Map();
  const firsts = before.filter((row) => row.downloaded_at === null);
  const { rows } = await tx.query<{ id: string; downloaded_at: number }>(
    `UPDATE tickets t SET
            credential_encrypted = coalesce(v.sealed, t.credential_encrypted),
            credential_kid = coalesce(v.kid, t.credential_kid),
            credential_issued_at = coalesce(v.issued_at, t.credential_issued_at),
            credential_expires_at = greatest(t.credential_expires_at, v.expires_at),
            downloaded_at = coalesce(t.downloaded_at, $4)
       FROM unnest($2::uuid[], $3::bytea[], $5::text[], $6::bigint[], $7::bigint[]) AS v (id, sealed, kid, issued_at, expires_at)
      WHERE t.tenant_id = $1 AND t.id = v.id AND t.id = ANY ($8::uuid[])
      RETURNING t.id, t.downloaded_at`,
    [
      tenantId,
      ticketIds,
      credentials.map((credential) => credential?.sealed ?? null),
      now,
      credentials.map((credential) => credential?.kid ?? null),
      credentials.map((credential) => credential?.issuedAt ?? null),
      credentials.map((credential) => credential?.expiresAt ?? null),
      before.map((row) => row.id),
    ],
  );
  // The events after the rows they name, taking the audit counter last (audit.repo.ts): a statement of their own, so
  // a cluster sharded by tenant runs each on the tenant's node (docs/scaling.md, *Running on Citus*).
  await appendAuditEvents(
    tx,
    firsts.map((row) => ({
      tenantId,
      time: now,
      actor: audit.actor,
      action: 'ticket.downloaded',
      target: `ticket:${row.id}`,
      requestId: audit.requestId,
      data: { ticketIds: [row.id], mobileDeviceId: row.mobile_device_id, securedObjectId: row.secured_object_id },
    })),
  );
  return new Map(rows.map((row) => [row.id, row.downloaded_at]));
}

/** A device whose tickets a download stores: the key its credentials were bound to, and their latest `exp` (ms). */
export interface DownloadedDevice {
  mobileDeviceId: string;
  /** Null: the device had no key, and its credentials carry no `cnf`. */
  keyThumbprint: string | null;
  /** The latest `exp` of a credential bound to the key handed out now; 0 when none. */
  boundUntil: number;
}

/** What a revocation list for one lock holds (docs/api-reference.md 8.3). */
export interface LockRevocations {
  securedObjectId: string;
  /** The change-log position of the last change concerning the lock, key-set changes included. */
  serial: number;
  /** Revoked tickets of the lock whose credential may still be alive, in id order. */
  revoked: string[];
  /** The lock's effective holder-binding policy (docs/api-reference.md 11.2). */
  holderBinding: HolderBinding;
  /** The tenant's revoked phone keys whose bound credentials may still be alive, by thumbprint (docs/api-reference.md 11.4). */
  revokedKeys: string[];
  /** The lock's state (docs/api-reference.md 15): its mode and serial; `normal` and 0 while no lockdown reached it. */
  lockState: { mode: 'lockdown' | 'normal'; serial: number };
}

/**
 * For each lock, its serial and the revocations it still needs: an index range per lock (tickets_sync_idx backwards
 * for the serial, tickets_alive_revocations_idx for the revocations), never the lock's whole history. "Still needs"
 * is at the lock's clock, as in a sync (CLOCK_MARGIN_SQL).
 */
export async function listLockRevocations(
  db: Queryable,
  tenantId: string,
  securedObjectIds: string[],
  now: number,
  maxClockMarginMs: number,
): Promise<LockRevocations[]> {
  if (securedObjectIds.length === 0) return [];
  const { rows } = await db.query<{
    secured_object_id: string;
    serial: number;
    revoked: string[];
    holder_binding: HolderBinding;
    revoked_keys: string[];
    lock_state_mode: 'lockdown' | 'normal';
    lock_state_seq: number;
  }>(
    `SELECT l.id AS secured_object_id,
            ${LOCK_SERIAL_SQL('$1', 'l.id')} AS serial,
            coalesce((SELECT array_agg(id::text ORDER BY id) FROM tickets
                       WHERE tenant_id = $1 AND secured_object_id = l.id AND revoked_at IS NOT NULL
                         AND credential_expires_at > $3::bigint + ${CLOCK_MARGIN_SQL('$1', 'l.id', '$4')}), '{}') AS revoked,
            ${HOLDER_BINDING_SQL('$1', 'l.id')} AS holder_binding,
            -- The same for every lock of the tenant, bounded by the lifetime like the tickets' revocations; read
            -- at the lock's clock, as a sync does.
            coalesce((SELECT array_agg(key_thumbprint ORDER BY key_thumbprint) FROM revoked_device_keys
                       WHERE tenant_id = $1 AND bound_until > $3::bigint + ${CLOCK_MARGIN_SQL('$1', 'l.id', '$4')}), '{}') AS revoked_keys,
            ${LOCK_STATE_MODE_SQL('$1', 'l.id')} AS lock_state_mode,
            ${LOCK_STATE_SEQ_SQL('$1', 'l.id')} AS lock_state_seq
       FROM unnest($2::text[]) AS l (id)
      ORDER BY l.id`,
    [tenantId, securedObjectIds, now, maxClockMarginMs],
  );
  return rows.map((row) => ({
    securedObjectId: row.secured_object_id,
    serial: Number(row.serial),
    revoked: row.revoked,
    holderBinding: row.holder_binding,
    revokedKeys: row.revoked_keys,
    lockState: { mode: row.lock_state_mode, serial: Number(row.lock_state_seq) },
  }));
}

/** The VALID tickets of every device of a resident (for its token card), at most `limit`. */
export async function listValidTicketsOfResident(
  db: Queryable,
  tenantId: string,
  residentId: string,
  now: number,
  limit: number,
): Promise<CredentialedTicket[]> {
  const { rows } = await db.query<TicketRow & CredentialColumns>(
    `SELECT ${[...TICKET_COLUMNS.split(', '), ...CREDENTIAL_COLUMNS.split(', ')].map((column) => `t.${column}`).join(', ')},
            ${LOCK_TIME_ZONE('$1', 't')}, ${HOLDER_KEYS('$1', 't')}
       FROM resident_devices rd
       JOIN tickets t ON t.tenant_id = $1 AND t.mobile_device_id = rd.mobile_device_id
      WHERE rd.tenant_id = $1 AND rd.resident_id = $2 AND t.revoked_at IS NULL AND t.end_date > $3
      ORDER BY t.created_at, t.id LIMIT $4`,
    [tenantId, residentId, now, limit],
  );
  return rows.map(toCredentialed);
}

/** A ticket with its sealed credential and whether its lock has applied its revocation (docs/api-reference.md 8.4). */
export interface ExplainedTicket extends CredentialedTicket {
  /** When the lock applied the ticket's revocation (ms); null while not revoked or not applied yet. */
  revocationAppliedAt: number | null;
}

/** What explain asks (docs/api-reference.md 8.6): the lock's time of the question, the command and the channel. */
export interface ExplainedAccess {
  lockTime: number;
  command: string;
  channel: string;
}

/**
 * The tickets of one device for one lock, whatever their status, at most `limit`: first those whose credential may open
 * the lock for `access` (the phone holds one, its revocation is not applied, it has not run out at the lock's time,
 * it grants the command and the channel; the rule itself decides later), then the others, each newest first. So a
 * ticket that opens is judged even behind many that do not, and explain's decision (docs/api-reference.md 8.6) is the
 * lock's whenever fewer than `limit` tickets may open. The device's tickets for the lock are sorted in full: a phone
 * holds few tickets for one door.
 */
export async function listTicketsOfDeviceForLock(
  db: Queryable,
  tenantId: string,
  mobileDeviceId: string,
  securedObjectId: string,
  access: ExplainedAccess,
  limit: number,
): Promise<ExplainedTicket[]> {
  const { rows } = await db.query<TicketRow & CredentialColumns & { revocation_applied_at: number | null }>(
    `SELECT ${TICKET_COLUMNS}, ${CREDENTIAL_COLUMNS}, ${LOCK_TIME_ZONE('$1', 'tickets')}, ${HOLDER_KEYS('$1', 'tickets')} FROM tickets
      WHERE tenant_id = $1 AND mobile_device_id = $2 AND secured_object_id = $3
      ORDER BY (credential_encrypted IS NOT NULL AND revocation_applied_at IS NULL AND credential_expires_at > $5::bigint
                AND $6::text = ANY (commands) AND $7::text = ANY (channels)) DESC,
               created_at DESC, id DESC
      LIMIT $4`,
    [tenantId, mobileDeviceId, securedObjectId, limit, access.lockTime, access.command, access.channel],
  );
  return rows.map((row) => ({ ...toCredentialed(row), revocationAppliedAt: row.revocation_applied_at }));
}

/**
 * The time zones of the tenant's locks, each row held FOR SHARE until the transaction ends: a PATCH of a zone
 * (docs/api-reference.md 9) commits before this read, which then sees its zone, or waits for this transaction, whose stored
 * credentials its forgetScheduledCredentials then drops. A download stores a scheduled ticket's credential only when
 * it was signed in the zone read here, so neither order keeps windows of the old zone.
 * LOCK ORDER: the lock rows before the tickets' (recordDownload), the order a PATCH and a removal take.
 */
export async function lockTimeZonesForShare(db: Queryable, tenantId: string, securedObjectIds: string[]): Promise<Map<string, string>> {
  const { rows } = await db.query<{ id: string; time_zone: string }>(
    `SELECT id, time_zone FROM secured_objects WHERE tenant_id = $1 AND id = ANY ($2::text[]) ORDER BY id FOR SHARE`,
    [tenantId, securedObjectIds],
  );
  return new Map(rows.map((row) => [row.id, row.time_zone]));
}

/**
 * Marks the credentials stored for a lock's scheduled tickets that are still valid to be signed anew, with their
 * windows in the lock's new time zone (docs/api-reference.md 9), on the phone's next download: their key id goes, which a
 * download takes as "sign again" (credential.service.ts needsSigning). The sealed credential stays, since the phone
 * still holds it until then and the explain (docs/api-reference.md 8.6) judges what the phone holds; its expiry stays too,
 * as the lock needs a revocation of such a ticket until then (docs/api-reference.md 8.2).
 * LOCK ORDER: called after the secured object's row is updated in the same transaction; a removal of the lock takes
 * its row before its tickets too (removal.ts), so the two never wait on each other in a cycle.
 */
export async function forgetScheduledCredentials(db: Queryable, tenantId: string, securedObjectId: string): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE tickets SET credential_kid = NULL
      WHERE tenant_id = $1 AND secured_object_id = $2 AND schedule IS NOT NULL AND revoked_at IS NULL
        AND credential_encrypted IS NOT NULL AND credential_kid IS NOT NULL`,
    [tenantId, securedObjectId],
  );
  return rowCount;
}
