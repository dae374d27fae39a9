// Revocation propagation (docs/api-reference.md 8.4): a lock's syncs acknowledge what it applied, the operator sees which
// revocations are still on their way, judged at the lock's clock (8.5), across a lock's deletion and re-registration.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordLockContact } from '../../src/db/repositories/lock-telemetry.repo.js';
import { LAST_SEEN_RESOLUTION_MS } from '../../src/services/lock-telemetry.service.js';
import { accessTenant, lockGroup, permission, resident, v1 } from '../helpers/access.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { download, lockToken, payloadOf, phoneToken, sync } from '../helpers/device.js';
import { clientToken, createClient, createTenant, type TenantFixture } from '../helpers/oauth.js';
import { call, device, HOUR, lock, ticket, type TicketBody } from '../helpers/operator.js';

const START = Date.UTC(2026, 2, 2, 8, 0, 0, 0);

interface LockBody {
  id: string;
  lastSeenTime?: number;
  appliedThrough?: number;
  pendingRevocations: number;
  clockOffset?: number;
  clockDrift: boolean;
}

describe('revocation propagation', () => {
  let t: TestApp;
  let now = START;
  let acme: TenantFixture;
  let operator: string;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4', ACCESS_TOKEN_TTL_SECONDS: '86400' }, { clock: () => now });
    acme = await createTenant(t.app, 'acme');
    operator = await clientToken(t.app, acme);
  });
  afterAll(async () => {
    await t.close();
  });

  /** Moves the clock past the resolution, so the next sync is written whatever its position. */
  const later = (ms = LAST_SEEN_RESOLUTION_MS + 1000) => {
    now += ms;
  };

  async function readLock(id: string): Promise<LockBody> {
    const response = await call(t, operator, { method: 'GET', url: `/operatorapi/securedobjects/${id}` });
    expect(response.statusCode, response.body).toBe(200);
    return response.json();
  }

  async function readTicket(id: string): Promise<TicketBody> {
    const response = await call(t, operator, { method: 'GET', url: `/operatorapi/tickets/${id}` });
    expect(response.statusCode, response.body).toBe(200);
    return response.json();
  }

  async function revoke(id: string): Promise<TicketBody> {
    const response = await call(t, operator, { method: 'DELETE', url: `/operatorapi/tickets/${id}` });
    expect(response.statusCode, response.body).toBe(200);
    return response.json();
  }

  async function revocationIds(query: string): Promise<string[]> {
    const response = await call(t, operator, { method: 'GET', url: `/operatorapi/revocations?${query}` });
    expect(response.statusCode, response.body).toBe(200);
    return (response.json() as TicketBody[]).map((item) => item.id);
  }

  async function changeSeqOf(ticketId: string): Promise<number> {
    const { rows } = await t.database.db.query<{ change_seq: number }>('SELECT change_seq FROM tickets WHERE id = $1', [ticketId]);
    return Number(rows[0]!.change_seq);
  }

  async function telemetryRow(id: string) {
    const { rows } = await t.database.db.query<{ last_seen_at: number; applied_through: number }>(
      'SELECT last_seen_at, applied_through FROM lock_telemetry WHERE tenant_id = $1 AND secured_object_id = $2',
      [acme.tenantId, id],
    );
    return rows[0] ? { lastSeenAt: Number(rows[0].last_seen_at), appliedThrough: Number(rows[0].applied_through) } : null;
  }

  /** A lock and a phone with one downloaded ticket for it: its credential is alive at the lock. */
  async function downloadedTicket(lockId: string, phoneId: string, overrides: object = {}) {
    const issued = await ticket(t, operator, lockId, phoneId, overrides);
    await download(t, await phoneToken(t, acme, phoneId), phoneId);
    return issued;
  }

  it('counts a revocation pending until an online sync acknowledges it, then stamps it at that sync\'s time', async () => {
    await lock(t, operator, 'door');
    await device(t, operator, 'phone-1');
    const lockAuth = await lockToken(t, acme, 'door');
    expect(await readLock('door')).toStrictEqual(expect.objectContaining({ pendingRevocations: 0, clockDrift: false }));
    expect(await readLock('door')).not.toHaveProperty('lastSeenTime');

    const full = await sync(t, lockAuth, 'door');
    // Seen, nothing acknowledged: a full sync's answer is applied only by the lock's next sync.
    expect(await readLock('door')).toMatchObject({ lastSeenTime: now, appliedThrough: 0, pendingRevocations: 0 });

    const issued = await downloadedTicket('door', 'phone-1');
    later();
    const withTicket = await sync(t, lockAuth, 'door', full.cursor);
    expect(withTicket.tokens.map((item) => item.id)).toEqual([issued.id]);
    await revoke(issued.id);
    const seq = await changeSeqOf(issued.id);
    expect(await readLock('door')).toMatchObject({ pendingRevocations: 1 });
    expect(await revocationIds('applied=false')).toEqual([issued.id]);
    expect(await revocationIds('applied=true')).toEqual([]);

    later();
    const withRevocation = await sync(t, lockAuth, 'door', withTicket.cursor);
    expect(withRevocation.revocations.map((item) => item.tokenId)).toEqual([issued.id]);
    // This sync acknowledged the answer before it (the ticket), not the revocation it carries.
    expect(await readLock('door')).toMatchObject({ lastSeenTime: now, appliedThrough: withTicket.serial, pendingRevocations: 1 });
    expect(await readTicket(issued.id)).not.toHaveProperty('revocationAppliedTime');

    later();
    const appliedAt = now;
    await sync(t, lockAuth, 'door', withRevocation.cursor);
    expect(withRevocation.serial).toBe(seq);
    expect(await readLock('door')).toMatchObject({ lastSeenTime: appliedAt, appliedThrough: seq, pendingRevocations: 0 });
    expect(await readTicket(issued.id)).toMatchObject({ status: 'REVOKED', revocationAppliedTime: appliedAt });
    expect(await revocationIds('applied=false')).toEqual([]);
    expect(await revocationIds('applied=true')).toEqual([issued.id]);
    expect(await revocationIds('securedObjectId=door')).toEqual([issued.id]);
    expect(await telemetryRow('door')).toEqual({ lastSeenAt: appliedAt, appliedThrough: seq });
    // Every answer of the ticket carries the stamp: the tickets' list too.
    const listed = await call(t, operator, { method: 'GET', url: '/operatorapi/tickets?securedObjectId=door' });
    expect(listed.json()).toEqual([expect.objectContaining({ id: issued.id, revocationAppliedTime: appliedAt })]);
  });

  it('acknowledges nothing on a full sync, and nothing for an unbound sync client: only the lock\'s own client speaks for it', async () => {
    await lock(t, operator, 'porch');
    await device(t, operator, 'phone-2');
    const issued = await downloadedTicket('porch', 'phone-2');
    await revoke(issued.id);
    const lockAuth = await lockToken(t, acme, 'porch');
    later();
    const full = await sync(t, lockAuth, 'porch');
    expect(full.revocations.map((item) => item.tokenId)).toEqual([issued.id]);
    expect(await readLock('porch')).toMatchObject({ lastSeenTime: now, appliedThrough: 0, pendingRevocations: 1 });
    later();
    await sync(t, lockAuth, 'porch');
    expect(await readLock('porch')).toMatchObject({ lastSeenTime: now, appliedThrough: 0, pendingRevocations: 1 });
    expect(await readTicket(issued.id)).not.toHaveProperty('revocationAppliedTime');

    // An unbound sync client (a hub, or any integration holding `sync`, docs/api-reference.md 6.2) may read the lock's
    // changes but never speaks for the door: its sync neither acknowledges nor counts as the lock being seen.
    const seen = now;
    const hub = await clientToken(t.app, await createClient(t.app, acme, ['sync']));
    later();
    await sync(t, hub, 'porch', full.cursor);
    expect(await readLock('porch')).toMatchObject({ lastSeenTime: seen, appliedThrough: 0, pendingRevocations: 1 });
    expect(await readTicket(issued.id)).not.toHaveProperty('revocationAppliedTime');
    // The lock's own client with the same cursor does.
    later();
    await sync(t, lockAuth, 'porch', full.cursor);
    expect(await readLock('porch')).toMatchObject({ lastSeenTime: now, appliedThrough: full.serial, pendingRevocations: 0 });
    expect(await readTicket(issued.id)).toMatchObject({ revocationAppliedTime: now });
  });

  it('writes a sync that acknowledges nothing new at most once per LAST_SEEN_RESOLUTION_MS, and a rise at once', async () => {
    await lock(t, operator, 'busy');
    const lockAuth = await lockToken(t, acme, 'busy');
    later();
    const first = now;
    const full = await sync(t, lockAuth, 'busy');
    now += 1000;
    await sync(t, lockAuth, 'busy', full.cursor);
    // The position rose (0 → the full sync's): written at once.
    expect(await telemetryRow('busy')).toEqual({ lastSeenAt: first + 1000, appliedThrough: full.serial });
    now += LAST_SEEN_RESOLUTION_MS - 1;
    await sync(t, lockAuth, 'busy', full.cursor);
    expect(await telemetryRow('busy')).toEqual({ lastSeenAt: first + 1000, appliedThrough: full.serial });
    now += 1;
    await sync(t, lockAuth, 'busy', full.cursor);
    expect(await telemetryRow('busy')).toEqual({ lastSeenAt: now, appliedThrough: full.serial });
  });

  it('does not over-acknowledge a change number whose answer was cut by the page limit', async () => {
    // One change grants three tickets for the lock (an access permission), one revokes them; the lock syncs two at a time.
    const access = await accessTenant(t, 'batch');
    const phones = ['p1', 'p2', 'p3'];
    await lock(t, access.operator, 'gate');
    for (const id of phones) await device(t, access.operator, id);
    const family = await resident(t, access.token, 'family', phones);
    const gates = await lockGroup(t, access.token, 'gates', ['gate']);
    const lockAuth = await lockToken(t, access.tenant, 'gate');
    const readGate = async () => (await call(t, access.operator, { method: 'GET', url: '/operatorapi/securedobjects/gate' })).json() as LockBody;
    const syncGate = async (cursor: string) => {
      later();
      return sync(t, lockAuth, 'gate', cursor, 2);
    };
    const full = await sync(t, lockAuth, 'gate');

    const granted = await permission(t, access.token, family.id, gates.id);
    expect(granted.tokenCount).toBe(3);
    for (const id of phones) await download(t, await phoneToken(t, access.tenant, id), id);
    const grantFirst = await syncGate(full.cursor);
    expect(grantFirst.tokens).toHaveLength(2);
    const grantSeq = grantFirst.serial + 1;
    const grantRest = await syncGate(grantFirst.cursor);
    expect(grantRest.tokens).toHaveLength(1);
    expect(grantRest.serial).toBe(grantSeq);
    // Asked from inside the grant's change: the lock has applied only what came before it.
    expect((await readGate()).appliedThrough).toBe(grantSeq - 1);
    await syncGate(grantRest.cursor);
    expect((await readGate()).appliedThrough).toBe(grantSeq);

    const revoked = await v1(t, access.token, { method: 'DELETE', url: `/v1/access-permissions/${granted.id}` });
    expect(revoked.statusCode, revoked.body).toBe(204);
    expect(await readGate()).toMatchObject({ appliedThrough: grantSeq, pendingRevocations: 3 });
    const revokedFirst = await syncGate(grantRest.cursor);
    expect(revokedFirst.revocations).toHaveLength(2);
    const revocationSeq = revokedFirst.serial + 1;
    const revokedRest = await syncGate(revokedFirst.cursor);
    expect(revokedRest.revocations).toHaveLength(1);
    expect(revokedRest.serial).toBe(revocationSeq);
    // Not even the two revocations already answered count as applied: the lock may not have applied that change whole.
    expect(await readGate()).toMatchObject({ appliedThrough: revocationSeq - 1, pendingRevocations: 3 });
    await syncGate(revokedRest.cursor);
    expect(await readGate()).toMatchObject({ appliedThrough: revocationSeq, pendingRevocations: 0 });
    const stamped = await t.database.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM tickets WHERE tenant_id = $1 AND revocation_applied_at = $2',
      [access.tenant.tenantId, now],
    );
    expect(stamped.rows[0]!.n).toBe(3);
  });

  it('never counts the revocation of a ticket that was never downloaded, nor one whose credential expired', async () => {
    await lock(t, operator, 'shed');
    await device(t, operator, 'phone-3');
    await device(t, operator, 'phone-4');
    const neverDownloaded = await ticket(t, operator, 'shed', 'phone-3');
    await revoke(neverDownloaded.id);
    expect(await readLock('shed')).toMatchObject({ pendingRevocations: 0 });
    expect(await revocationIds('securedObjectId=shed')).toEqual([]);
    const lockAuth = await lockToken(t, acme, 'shed');
    const full = await sync(t, lockAuth, 'shed');
    later();
    await sync(t, lockAuth, 'shed', full.cursor);
    // Acknowledged past it, yet never stamped: the lock never needed it (docs/api-reference.md 8.2).
    expect(await readTicket(neverDownloaded.id)).not.toHaveProperty('revocationAppliedTime');

    const expiring = await downloadedTicket('shed', 'phone-4', { endDate: now + HOUR });
    await revoke(expiring.id);
    expect(await readLock('shed')).toMatchObject({ pendingRevocations: 1 });
    expect(await revocationIds('applied=false&securedObjectId=shed')).toEqual([expiring.id]);
    now += HOUR;
    // Its credential expired with the ticket: no door opens for it any more, applied or not.
    expect(await readLock('shed')).toMatchObject({ pendingRevocations: 0 });
    expect(await revocationIds('applied=false&securedObjectId=shed')).toEqual([]);
    expect(await revocationIds('securedObjectId=shed')).toEqual([]);
  });

  it('keeps a revocation pending, synced and listed while the lock\'s clock runs behind its credential\'s expiry', async () => {
    await lock(t, operator, 'slow');
    await lock(t, operator, 'fast');
    await device(t, operator, 'phone-5');
    await device(t, operator, 'phone-6');
    const issuedAt = now;
    const slowTicket = await downloadedTicket('slow', 'phone-5', { endDate: issuedAt + HOUR });
    const fastTicket = await downloadedTicket('fast', 'phone-5', { endDate: issuedAt + HOUR });
    await revoke(slowTicket.id);
    await revoke(fastTicket.id);
    // The offsets an access-log upload would estimate (docs/api-reference.md 8.5): 'slow' two minutes behind, 'fast' ahead.
    await recordLockContact(t.database.db, acme.tenantId, 'slow', { seenAt: now, clockOffsetMs: -120_000 });
    await recordLockContact(t.database.db, acme.tenantId, 'fast', { seenAt: now, clockOffsetMs: 120_000 });
    expect(await readLock('slow')).toMatchObject({ clockOffset: -120_000, clockDrift: true, pendingRevocations: 1 });
    expect(await readLock('fast')).toMatchObject({ clockOffset: 120_000, clockDrift: true, pendingRevocations: 1 });

    now = issuedAt + HOUR + 60_000;
    // A minute past the expiry by the server's clock: the slow lock still reads a minute before it.
    expect(await readLock('slow')).toMatchObject({ pendingRevocations: 1 });
    expect(await readLock('fast')).toMatchObject({ pendingRevocations: 0 });
    expect(await revocationIds('applied=false&securedObjectId=slow')).toEqual([slowTicket.id]);
    expect(await revocationIds('applied=false&securedObjectId=fast')).toEqual([]);
    const slowSync = await sync(t, await lockToken(t, acme, 'slow'), 'slow');
    expect(slowSync.revocations.map((item) => item.tokenId)).toEqual([slowTicket.id]);
    const fastSync = await sync(t, await lockToken(t, acme, 'fast'), 'fast');
    expect(fastSync.revocations).toEqual([]);
    // A phone visiting the slow lock carries the revocation in the lock's list (docs/api-reference.md 8.3).
    await ticket(t, operator, 'slow', 'phone-6');
    await ticket(t, operator, 'fast', 'phone-6');
    const carried = await download(t, await phoneToken(t, acme, 'phone-6'), 'phone-6');
    const listOf = (lockId: string) => payloadOf(carried.find((item) => item.securedObjectId === lockId)!.revocationList!).revoked;
    expect(listOf('slow')).toEqual([slowTicket.id]);
    expect(listOf('fast')).toEqual([]);

    now = issuedAt + HOUR + 120_000;
    expect(await readLock('slow')).toMatchObject({ pendingRevocations: 0 });
    expect(await revocationIds('applied=false&securedObjectId=slow')).toEqual([]);
  });

  it('lets a deleted lock\'s client acknowledge its revocations; the id registered again is another lock that starts fresh', async () => {
    await lock(t, operator, 'annex');
    await device(t, operator, 'phone-7');
    const lockClient = await createClient(t.app, acme, ['sync'], { securedObjectId: 'annex' });
    const issued = await downloadedTicket('annex', 'phone-7');
    const full = await sync(t, await clientToken(t.app, lockClient), 'annex');
    await recordLockContact(t.database.db, acme.tenantId, 'annex', { seenAt: now, clockOffsetMs: -45_000 });

    expect((await call(t, operator, { method: 'DELETE', url: '/operatorapi/securedobjects/annex' })).statusCode).toBe(204);
    // The door still exists and may open for the phone until it applied the revocation its deletion caused.
    expect(await revocationIds('applied=false&securedObjectId=annex')).toEqual([issued.id]);
    const decommissioned = await clientToken(t.app, lockClient, 'sync');
    later();
    const withRevocation = await sync(t, decommissioned, 'annex', full.cursor);
    expect(withRevocation).toMatchObject({ decommissioned: true, revocations: [{ tokenId: issued.id }] });
    later();
    const appliedAt = now;
    const quiet = await sync(t, decommissioned, 'annex', withRevocation.cursor);
    expect(await revocationIds('applied=false&securedObjectId=annex')).toEqual([]);
    expect(await revocationIds('applied=true&securedObjectId=annex')).toEqual([issued.id]);
    expect(await readTicket(issued.id)).toMatchObject({ revocationAppliedTime: appliedAt });
    expect(await telemetryRow('annex')).toEqual({ lastSeenAt: appliedAt, appliedThrough: withRevocation.serial });

    // Registered again: another lock, seen never, its clock unknown.
    await lock(t, operator, 'annex');
    expect(await telemetryRow('annex')).toBeNull();
    const fresh = await readLock('annex');
    expect(fresh).toMatchObject({ pendingRevocations: 0, clockDrift: false });
    for (const field of ['lastSeenTime', 'appliedThrough', 'clockOffset']) expect(fresh).not.toHaveProperty(field);
    // The old lock's revocation stays applied.
    expect(await readTicket(issued.id)).toMatchObject({ revocationAppliedTime: appliedAt });

    // The old client speaks for the old lock: its syncs acknowledge nothing for the new one.
    const newTicket = await downloadedTicket('annex', 'phone-7');
    await revoke(newTicket.id);
    later();
    const oldView = await sync(t, decommissioned, 'annex', quiet.cursor);
    expect(oldView).toMatchObject({ decommissioned: true, tokens: [], revocations: [] });
    later();
    await sync(t, decommissioned, 'annex', oldView.cursor);
    expect(await telemetryRow('annex')).toBeNull();
    expect(await readLock('annex')).toMatchObject({ pendingRevocations: 1 });
    expect(await readLock('annex')).not.toHaveProperty('lastSeenTime');

    const newLock = await lockToken(t, acme, 'annex');
    const newFull = await sync(t, newLock, 'annex');
    later();
    await sync(t, newLock, 'annex', newFull.cursor);
    expect(await readLock('annex')).toMatchObject({ lastSeenTime: now, pendingRevocations: 0 });
  });
});
