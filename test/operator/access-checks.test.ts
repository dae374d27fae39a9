// GET /operatorapi/access-checks (docs/api-reference.md 8.6): every reason a lock opens or refuses for a phone, the revocation
// that has not reached the door yet, the lock's clock, and one check that the endpoint and the lock simulator decide
// the same credential alike at every instant (they share src/shared/credential-check.ts).
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordLockContact } from '../../src/db/repositories/lock-telemetry.repo.js';
import { LockSimulator, type LockDecisionReason, type SyncAnswer } from '../../src/simulator/lock-simulator.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { expectNothingChanged } from '../helpers/database-state.js';
import { download, lockToken, lockTrust, phoneToken, type DownloadedTicket } from '../helpers/device.js';
import { bearer, clientToken, createClient, keyRotationToken } from '../helpers/oauth.js';
import { call, device, expectAuthChecks, expectProblem, fieldsOf, HOUR, lock, ticket } from '../helpers/operator.js';
import { twoTenants, type TwoTenants } from '../helpers/tenants.js';
import { newKeyPair, registerKey } from '../helpers/holder-keys.js';

const DAY = 24 * HOUR;
/** A whole second: a ticket beginning now has `nbf` now (a later millisecond would round `nbf` up to the next second). */
const START = Date.UTC(2026, 2, 2, 9, 0, 0);

interface Reason {
  code: string;
  message: string;
  nextWindowStart?: number;
  credentialAvailableFrom?: number;
}

interface AccessCheckBody {
  decision: 'allow' | 'deny';
  reasons: Reason[];
  tokens: { id: string; status: string; decision: 'allow' | 'deny'; reasons: Reason[] }[];
  truncated: boolean;
  at: number;
  lockTime: number;
  command: string;
  channel: string;
}

const codes = (reasons: Reason[]) => reasons.map((reason) => reason.code);

describe('GET /operatorapi/access-checks', () => {
  let t: TestApp;
  let now = START;
  let tenants: TwoTenants;
  let readToken: string;

  function checkRequest(query: Record<string, string | number>, token = readToken) {
    const search = new URLSearchParams(Object.entries(query).map(([name, value]): [string, string] => [name, String(value)]));
    return call(t, token, { method: 'GET', url: `/operatorapi/access-checks?${search}` });
  }

  async function check(mobileDeviceId: string, securedObjectId: string, extra: Record<string, string | number> = {}): Promise<AccessCheckBody> {
    const response = await checkRequest({ mobileDeviceId, securedObjectId, ...extra });
    expect(response.statusCode, response.body).toBe(200);
    return response.json();
  }

  async function downloadAs(mobileDeviceId: string): Promise<DownloadedTicket[]> {
    return download(t, await phoneToken(t, tenants.acme, mobileDeviceId), mobileDeviceId);
  }

  async function changeSeqOf(ticketId: string): Promise<number> {
    const { rows } = await t.database.db.query<{ change_seq: number }>('SELECT change_seq FROM tickets WHERE id = $1', [ticketId]);
    return Number(rows[0]!.change_seq);
  }

  beforeAll(async () => {
    // Two emergency rotations of one tenant within an hour: the rotation budget (docs/security-cases.md H50) is tested in
    // test/device/ticket-keys.test.ts, not here.
    t = await buildTestApp({ BCRYPT_COST: '4', DEPRECATED_INTERFACES_ENABLED: 'nfccard-channel', TICKET_KEY_EMERGENCY_ROTATION_MIN_INTERVAL: '0' }, { clock: () => now });
    tenants = await twoTenants(t, {
      acme: { locks: ['door', 'gate'], devices: ['phone-empty', 'phone-fresh', 'phone-late', 'phone-revoked-early', 'phone-dated', 'phone-long'] },
      other: { locks: ['other-door'], devices: ['other-phone'] },
    });
    readToken = await clientToken(t.app, await createClient(t.app, tenants.acme, ['tokens:read']));
  });
  afterAll(async () => {
    await t.close();
  });

  it('answers no-token for a phone without a ticket for the lock, at now, for `open` over the lock\'s first channel, and changes nothing', async () => {
    await expectNothingChanged(t, async () => {
      const body = await check('phone-empty', 'door');
      expect(body).toEqual({
        decision: 'deny',
        reasons: [{ code: 'no-token', message: expect.stringContaining('POST /operatorapi/tickets') }],
        tokens: [],
        truncated: false,
        at: now,
        lockTime: now,
        command: 'open',
        channel: 'btlespp',
      });
    });
  });

  it('answers not-downloaded until the phone downloads, then allow with valid; the decision follows `at` and `command`', async () => {
    const issued = await ticket(t, tenants.token, 'door', 'phone-fresh', { beginDate: now, endDate: now + 2 * HOUR, commands: ['open'] });
    const before = await check('phone-fresh', 'door');
    expect(before.decision).toBe('deny');
    expect(before.tokens).toEqual([{ id: issued.id, status: 'VALID', decision: 'deny', reasons: [expect.objectContaining({ code: 'not-downloaded' })] }]);
    expect(before.tokens[0]!.reasons[0]!.message).toMatch(/next download/);
    // What a downloaded credential would meet is said too.
    const wouldRefuse = await check('phone-fresh', 'door', { command: 'clos' });
    expect(codes(wouldRefuse.tokens[0]!.reasons)).toEqual(['not-downloaded', 'command-not-granted']);
    expect(wouldRefuse.tokens[0]!.reasons[1]!.message).toMatch(/^Once downloaded: /);
    expect(codes(wouldRefuse.reasons)).toEqual(['not-downloaded', 'command-not-granted']);

    await downloadAs('phone-fresh');
    const after = await check('phone-fresh', 'door');
    expect(after).toMatchObject({ decision: 'allow', reasons: [{ code: 'valid' }], tokens: [{ id: issued.id, decision: 'allow', reasons: [{ code: 'valid' }] }] });
    // The same credential at other instants and for another command.
    expect(codes((await check('phone-fresh', 'door', { at: now + 2 * HOUR })).reasons)).toEqual(['expired']);
    expect(codes((await check('phone-fresh', 'door', { at: now - 1000 })).reasons)).toEqual(['not-yet-valid']);
    expect(codes((await check('phone-fresh', 'door', { command: 'clos' })).reasons)).toEqual(['command-not-granted']);
    expect((await check('phone-fresh', 'door', { at: now + HOUR })).at).toBe(now + HOUR);
  });

  it('says when a ticket beginning beyond one credential lifetime can first be downloaded (credentialAvailableFrom)', async () => {
    const beginDate = now + 30 * DAY;
    const issued = await ticket(t, tenants.token, 'door', 'phone-late', { beginDate, endDate: beginDate + DAY });
    const [listed] = await downloadAs('phone-late');
    expect(listed!.credential).toBeUndefined();
    const body = await check('phone-late', 'door');
    const [notDownloaded, notYetValid] = body.tokens[0]!.reasons;
    expect(body.tokens[0]!.id).toBe(issued.id);
    expect(notDownloaded).toMatchObject({ code: 'not-downloaded', credentialAvailableFrom: listed!.credentialAvailableFrom });
    expect(notDownloaded!.message).toContain(new Date(listed!.credentialAvailableFrom!).toISOString());
    expect(notDownloaded!.message).toContain(`${listed!.credentialAvailableFrom} ms`);
    expect(notYetValid).toMatchObject({ code: 'not-yet-valid', message: expect.stringMatching(/^Once downloaded: Not valid yet/) });
    // At an instant inside the ticket the phone would open once it downloads: only not-downloaded remains.
    expect(codes((await check('phone-late', 'door', { at: beginDate + HOUR })).reasons)).toEqual(['not-downloaded']);
  });

  it('a ticket revoked before any download: not-downloaded, none will be handed out', async () => {
    const issued = await ticket(t, tenants.token, 'door', 'phone-revoked-early');
    expect((await call(t, tenants.token, { method: 'DELETE', url: `/operatorapi/tickets/${issued.id}` })).statusCode).toBe(200);
    const body = await check('phone-revoked-early', 'door');
    expect(body).toMatchObject({ decision: 'deny', tokens: [{ id: issued.id, status: 'REVOKED', decision: 'deny' }] });
    expect(body.tokens[0]!.reasons).toEqual([{ code: 'not-downloaded', message: expect.stringMatching(/none will be handed out: the ticket was revoked/) }]);
  });

  it('credential-expired: the ticket runs on but the phone\'s credential ran out; a download renews it', async () => {
    const issued = await ticket(t, tenants.token, 'door', 'phone-long', { beginDate: now, endDate: now + 60 * DAY });
    const [downloaded] = await downloadAs('phone-long');
    const exp = decodeJwt(downloaded!.credential).exp! * 1000;
    const body = await check('phone-long', 'door', { at: exp });
    expect(body.tokens).toEqual([
      { id: issued.id, status: 'VALID', decision: 'deny', reasons: [{ code: 'credential-expired', message: expect.stringMatching(/renews it on its next download/) }] },
    ]);
    expect((await check('phone-long', 'door', { at: exp - 1 })).decision).toBe('allow');
    // Past the ticket's own end it is plainly expired.
    expect(codes((await check('phone-long', 'door', { at: now + 60 * DAY })).reasons)).toEqual(['expired']);
  });

  it('channel-not-supported for a channel the lock lacks; channel-not-granted for one the lock has but the ticket does not grant', async () => {
    await lock(t, tenants.token, 'dual', ['btlespp', 'nfccard']);
    await device(t, tenants.token, 'phone-channels');
    await ticket(t, tenants.token, 'dual', 'phone-channels', { channels: ['btlespp'] });
    await ticket(t, tenants.token, 'door', 'phone-channels', { channels: ['btlespp'] });
    await downloadAs('phone-channels');
    expect((await check('phone-channels', 'dual')).decision).toBe('allow');
    const notGranted = await check('phone-channels', 'dual', { channel: 'nfccard' });
    expect(notGranted).toMatchObject({ decision: 'deny', channel: 'nfccard', reasons: [{ code: 'channel-not-granted' }] });
    const notSupported = await check('phone-channels', 'door', { channel: 'nfccard' });
    expect(notSupported).toMatchObject({ decision: 'deny', reasons: [{ code: 'channel-not-supported', message: expect.stringContaining('supports btlespp') }] });
    expect(codes(notSupported.tokens[0]!.reasons)).toEqual(['channel-not-supported']);
    // Even without a ticket, the lock's own refusal is said beside no-token.
    expect(codes((await check('phone-empty', 'door', { channel: 'nfccard' })).reasons)).toEqual(['no-token', 'channel-not-supported']);
  });

  it('revoke → revocation-not-applied with allow (the door may still open) → the lock applies it → deny revoked', async () => {
    await device(t, tenants.token, 'phone-revoked');
    const issued = await ticket(t, tenants.token, 'door', 'phone-revoked', { endDate: now + DAY });
    await downloadAs('phone-revoked');
    expect((await check('phone-revoked', 'door')).decision).toBe('allow');
    expect((await call(t, tenants.token, { method: 'DELETE', url: `/operatorapi/tickets/${issued.id}` })).statusCode).toBe(200);

    const pending = await check('phone-revoked', 'door');
    expect(pending).toMatchObject({
      decision: 'allow',
      reasons: [{ code: 'revocation-not-applied', message: expect.stringContaining('MAY STILL OPEN') }],
      tokens: [{ id: issued.id, status: 'REVOKED', decision: 'allow', reasons: [{ code: 'revocation-not-applied' }] }],
    });
    // Refused for another reason anyway: said beside it, and the decision is deny.
    const refusedAnyway = await check('phone-revoked', 'door', { command: 'clos' });
    expect(refusedAnyway.decision).toBe('deny');
    expect(codes(refusedAnyway.reasons)).toEqual(['command-not-granted', 'revocation-not-applied']);
    expect(refusedAnyway.reasons[1]!.message).toMatch(/refuses this credential anyway/);

    // The lock acknowledges the change that revoked it (the sync acknowledgement is docs/api-reference.md 8.4's, simulated here).
    now += 1000;
    await recordLockContact(t.database.db, tenants.acme.tenantId, 'door', { seenAt: now, appliedThrough: await changeSeqOf(issued.id) });
    const { rows } = await t.database.db.query<{ revocation_applied_at: number }>('SELECT revocation_applied_at FROM tickets WHERE id = $1', [issued.id]);
    expect(rows[0]!.revocation_applied_at).toBe(now);
    const applied = await check('phone-revoked', 'door');
    expect(applied).toMatchObject({ decision: 'deny', reasons: [{ code: 'revoked' }], tokens: [{ decision: 'deny', reasons: [{ code: 'revoked' }] }] });
    expect(applied.reasons[0]!.message).toContain(new Date(now).toISOString());
    // Expired and revoked: both said.
    expect(codes((await check('phone-revoked', 'door', { at: now + 2 * DAY })).reasons)).toEqual(['expired', 'revoked']);
  });

  it('judges with the lock\'s clock (at + its offset) and says clock-drift beyond 30 s', async () => {
    await lock(t, tenants.token, 'drifting');
    await device(t, tenants.token, 'phone-drift');
    const endDate = now + HOUR;
    await ticket(t, tenants.token, 'drifting', 'phone-drift', { beginDate: now, endDate });
    await downloadAs('phone-drift');
    await recordLockContact(t.database.db, tenants.acme.tenantId, 'drifting', { seenAt: now, clockOffsetMs: 20_000 });
    const small = await check('phone-drift', 'drifting', { at: endDate - 30_000 });
    expect(small).toMatchObject({ decision: 'allow', lockTime: endDate - 10_000, reasons: [{ code: 'valid' }] });

    await recordLockContact(t.database.db, tenants.acme.tenantId, 'drifting', { seenAt: now, clockOffsetMs: 90_000 });
    // Server time before the end, lock time after it: the lock refuses.
    const drifted = await check('phone-drift', 'drifting', { at: endDate - 30_000 });
    expect(drifted).toMatchObject({ decision: 'deny', at: endDate - 30_000, lockTime: endDate + 60_000 });
    expect(codes(drifted.reasons)).toEqual(['expired', 'clock-drift']);
    expect(drifted.reasons[1]!.message).toMatch(/90 s ahead of/);
    const stillOpen = await check('phone-drift', 'drifting', { at: endDate - 120_000 });
    expect(codes(stillOpen.reasons)).toEqual(['valid', 'clock-drift']);
  });

  it('key-not-published after an emergency rotation withdrew the credential\'s key; a new download opens again', async () => {
    await device(t, tenants.token, 'phone-rotated');
    await ticket(t, tenants.token, 'gate', 'phone-rotated', { endDate: now + DAY });
    await downloadAs('phone-rotated');
    expect((await check('phone-rotated', 'gate')).decision).toBe('allow');
    const rotation = await call(t, await keyRotationToken(t.app, tenants.acme), { method: 'POST', url: '/operatorapi/ticket-keys/rotations', payload: { emergency: true } });
    expect(rotation.statusCode, rotation.body).toBe(201);
    // Until the lock has applied the new key set it may still hold the withdrawn key: the door may still open.
    const mayOpen = await check('phone-rotated', 'gate');
    expect(mayOpen).toMatchObject({ decision: 'allow', reasons: [{ code: 'key-not-published', message: expect.stringContaining('MAY STILL OPEN') }] });
    const { rows } = await t.database.db.query<{ change_seq: number }>('SELECT change_seq FROM ticket_key_set_changes WHERE tenant_id = $1', [tenants.acme.tenantId]);
    await recordLockContact(t.database.db, tenants.acme.tenantId, 'gate', { seenAt: now, appliedThrough: Number(rows[0]!.change_seq) });
    const refused = await check('phone-rotated', 'gate');
    expect(refused).toMatchObject({ decision: 'deny', reasons: [{ code: 'key-not-published', message: expect.stringContaining('download its tickets again') }] });
    await downloadAs('phone-rotated');
    expect((await check('phone-rotated', 'gate')).decision).toBe('allow');
  });

  it('binding-not-applied, then binding-required, at a lock that requires bound credentials; key-revocation-not-applied, then key-revoked, for a replaced key', async () => {
    await lock(t, tenants.token, 'bound-door');
    await device(t, tenants.token, 'phone-bound');
    await ticket(t, tenants.token, 'bound-door', 'phone-bound', { endDate: now + DAY });
    const patched = await call(t, tenants.token, { method: 'PATCH', url: '/operatorapi/securedobjects/bound-door', payload: { holderBinding: 'required' } });
    expect(patched.statusCode, patched.body).toBe(200);
    await downloadAs('phone-bound');
    // The lock has not applied the policy yet: it still opens for the unbound credential, and explain says so.
    expect(await check('phone-bound', 'bound-door')).toMatchObject({ decision: 'allow', reasons: [{ code: 'binding-not-applied' }] });
    const policy = await t.database.db.query<{ holder_binding_seq: number }>('SELECT holder_binding_seq FROM secured_objects WHERE tenant_id = $1 AND id = $2', [
      tenants.acme.tenantId,
      'bound-door',
    ]);
    await recordLockContact(t.database.db, tenants.acme.tenantId, 'bound-door', { seenAt: now, appliedThrough: Number(policy.rows[0]!.holder_binding_seq) });
    expect(await check('phone-bound', 'bound-door')).toMatchObject({ decision: 'deny', reasons: [{ code: 'binding-required' }] });

    // The phone registers its key and downloads again: its credential is bound, and the lock opens.
    const phone = await phoneToken(t, tenants.acme, 'phone-bound');
    await registerKey(t, phone, 'mobiledevices', 'phone-bound', newKeyPair());
    await downloadAs('phone-bound');
    expect(await check('phone-bound', 'bound-door')).toMatchObject({ decision: 'allow', reasons: [{ code: 'valid' }] });

    // A new key revokes the old one; the credential the server holds is still bound to it until the next download.
    await registerKey(t, phone, 'mobiledevices', 'phone-bound', newKeyPair());
    expect(await check('phone-bound', 'bound-door')).toMatchObject({ decision: 'allow', reasons: [{ code: 'key-revocation-not-applied' }] });
    const { rows } = await t.database.db.query<{ change_seq: number }>('SELECT max(change_seq) AS change_seq FROM revoked_device_keys WHERE tenant_id = $1', [tenants.acme.tenantId]);
    await recordLockContact(t.database.db, tenants.acme.tenantId, 'bound-door', { seenAt: now, appliedThrough: Number(rows[0]!.change_seq) });
    expect(await check('phone-bound', 'bound-door')).toMatchObject({ decision: 'deny', reasons: [{ code: 'key-revoked' }] });
    await downloadAs('phone-bound');
    expect((await check('phone-bound', 'bound-door')).decision).toBe('allow');
  });

  it('lockdown: a lock in lockdown refuses a ticket with lockdown, applied or not yet; an override ticket opens with a note; the end opens again', async () => {
    const acme = { tenantId: tenants.acme.tenantId, actor: 'cli', requestId: null };
    await lock(t, tenants.token, 'lockdown-vault');
    await lock(t, tenants.token, 'side-door');
    await device(t, tenants.token, 'phone-pupil');
    await device(t, tenants.token, 'phone-officer');
    const group = await t.app.services.lockGroups.create(acme, 'lockdown wing', ['lockdown-vault']);
    const manager = await clientToken(t.app, await createClient(t.app, tenants.acme, ['lockdown:manage', 'tokens:create']));
    const plain = await ticket(t, tenants.token, 'lockdown-vault', 'phone-pupil', { beginDate: now, endDate: now + DAY });
    const override = await ticket(t, manager, 'lockdown-vault', 'phone-officer', { beginDate: now, endDate: now + DAY, override: true });
    await downloadAs('phone-pupil');
    await downloadAs('phone-officer');
    expect(codes((await check('phone-pupil', 'lockdown-vault')).reasons)).toEqual(['valid']);

    const started = await call(t, manager, { method: 'POST', url: '/operatorapi/lockdowns', payload: { scope: { lockGroupId: group.id }, mode: 'lockdown', reason: 'drill' } });
    expect(started.statusCode, started.body).toBe(201);
    const serial = (started.json() as { serial: number }).serial;
    const refused = await check('phone-pupil', 'lockdown-vault');
    expect(refused).toMatchObject({ decision: 'deny', tokens: [{ id: plain.id, decision: 'deny', reasons: [{ code: 'lockdown' }] }] });
    expect(refused.reasons).toEqual([{ code: 'lockdown', message: expect.stringContaining('once the state reaches it') }]);
    const opens = await check('phone-officer', 'lockdown-vault');
    expect(opens).toMatchObject({ decision: 'allow', tokens: [{ id: override.id, decision: 'allow' }] });
    expect(codes(opens.reasons)).toEqual(['valid', 'lockdown-override']);
    // Another lock of the tenant is not in the lockdown.
    await ticket(t, tenants.token, 'side-door', 'phone-pupil', { beginDate: now, endDate: now + DAY });
    await downloadAs('phone-pupil');
    expect(codes((await check('phone-pupil', 'side-door')).reasons)).toEqual(['valid']);

    // The lock acknowledges the state's serial (docs/api-reference.md 8.4): the refusal is the lock's own now.
    await recordLockContact(t.database.db, tenants.acme.tenantId, 'lockdown-vault', { seenAt: now, appliedThrough: serial });
    expect((await check('phone-pupil', 'lockdown-vault')).reasons).toEqual([{ code: 'lockdown', message: expect.stringContaining('has applied it') }]);

    const ended = await call(t, manager, { method: 'POST', url: '/operatorapi/lockdowns', payload: { scope: { lockGroupId: group.id }, mode: 'normal', reason: 'all clear' } });
    expect(ended.statusCode, ended.body).toBe(201);
    // Ended, but the lock acknowledged only the lockdown: as far as the service knows it still refuses.
    const notLearnt = await check('phone-pupil', 'lockdown-vault');
    expect(notLearnt.decision).toBe('allow');
    expect(notLearnt.reasons).toEqual([{ code: 'lockdown-end-not-applied', message: expect.stringContaining('has not learnt it yet') }]);
    expect(codes((await check('phone-officer', 'lockdown-vault')).reasons)).toEqual(['valid']);
    // It acknowledges the end: normal again.
    const endSerial = (ended.json() as { serial: number }).serial;
    await recordLockContact(t.database.db, tenants.acme.tenantId, 'lockdown-vault', { seenAt: now, appliedThrough: endSerial });
    expect(codes((await check('phone-pupil', 'lockdown-vault')).reasons)).toEqual(['valid']);
    expect(codes((await check('phone-officer', 'lockdown-vault')).reasons)).toEqual(['valid']);
  });

  it('judges 50 tickets, those that may open first, each newest first, and says when there are more; allow when any of them opens', async () => {
    await lock(t, tenants.token, 'busy');
    await device(t, tenants.token, 'phone-busy');
    const opening = await ticket(t, tenants.token, 'busy', 'phone-busy', { commands: ['open'] });
    const ids: string[] = [];
    for (let index = 0; index < 50; index++) {
      now += 1000;
      ids.push((await ticket(t, tenants.token, 'busy', 'phone-busy', { commands: ['clos'] })).id);
    }
    await downloadAs('phone-busy');
    const body = await check('phone-busy', 'busy');
    expect(body.truncated).toBe(true);
    // The oldest ticket, the only one granting `open`, is judged first, though 50 newer ones follow it: the lock opens.
    expect(body.tokens.map((token) => token.id)).toEqual([opening.id, ...ids.reverse().slice(0, 49)]);
    expect(body).toMatchObject({ decision: 'allow', reasons: [{ code: 'valid' }] });
    // For `clos`, the 50 newest may open and the oldest does not: it is the one left out.
    const closing = await check('phone-busy', 'busy', { command: 'clos' });
    expect(closing.decision).toBe('allow');
    expect(closing.tokens.map((token) => token.id)).toEqual(ids);
  });

  describe('refusals', () => {
    it('404 naming the unknown or foreign lock or phone', async () => {
      await expectNothingChanged(t, async () => {
        expect(expectProblem(await checkRequest({ mobileDeviceId: 'phone-empty', securedObjectId: 'nowhere' }), 404).detail).toBe('No secured object nowhere.');
        expect(expectProblem(await checkRequest({ mobileDeviceId: 'nobody', securedObjectId: 'door' }), 404).detail).toBe('No mobile device nobody.');
        expect(expectProblem(await checkRequest({ mobileDeviceId: 'nobody', securedObjectId: 'nowhere' }), 404).detail).toBe(
          'No secured object nowhere and no mobile device nobody.',
        );
        // Another tenant's lock and phone answer exactly as missing ones (docs/api-reference.md 2).
        expect(expectProblem(await checkRequest({ mobileDeviceId: 'phone-empty', securedObjectId: 'other-door' }), 404).detail).toBe('No secured object other-door.');
        expect(expectProblem(await checkRequest({ mobileDeviceId: 'other-phone', securedObjectId: 'door' }), 404).detail).toBe('No mobile device other-phone.');
        // And the other tenant is served its own.
        const own = await checkRequest({ mobileDeviceId: 'other-phone', securedObjectId: 'other-door' }, tenants.otherToken);
        expect(own.statusCode, own.body).toBe(200);
      });
    });

    it('401 without a token, 403 without tokens:read', async () => {
      const devicesOnly = await clientToken(t.app, await createClient(t.app, tenants.acme, ['devices:read', 'tokens:create']));
      await expectAuthChecks(t, devicesOnly, [{ method: 'GET', url: '/operatorapi/access-checks?mobileDeviceId=phone-empty&securedObjectId=door', scope: 'tokens:read' }]);
      // A phone's or a lock's own Device API client is no operator.
      const phone = await call(t, await phoneToken(t, tenants.acme, 'phone-empty'), { method: 'GET', url: '/operatorapi/access-checks?mobileDeviceId=phone-empty&securedObjectId=door' });
      expectProblem(phone, 401);
      const lockClient = await call(t, await lockToken(t, tenants.acme, 'door'), { method: 'GET', url: '/operatorapi/access-checks?mobileDeviceId=phone-empty&securedObjectId=door' });
      expectProblem(lockClient, 401);
    });

    it.each([
      [{ securedObjectId: 'door' }, ['mobileDeviceId']],
      [{ mobileDeviceId: 'phone-empty' }, ['securedObjectId']],
      [{ mobileDeviceId: 'phone-empty', securedObjectId: 'door', at: -1 }, ['at']],
      [{ mobileDeviceId: 'phone-empty', securedObjectId: 'door', at: 1.5 }, ['at']],
      [{ mobileDeviceId: 'phone-empty', securedObjectId: 'door', at: 8640000000000001 }, ['at']],
      [{ mobileDeviceId: 'phone-empty', securedObjectId: 'door', at: 'tomorrow' }, ['at']],
      [{ mobileDeviceId: 'phone-empty', securedObjectId: 'door', command: 'fly' }, ['command']],
      [{ mobileDeviceId: 'phone-empty', securedObjectId: 'door', channel: '' }, ['channel']],
      [{ mobileDeviceId: 'phone-empty', securedObjectId: 'door', channel: 'x'.repeat(33) }, ['channel']],
      [{ mobileDeviceId: '', securedObjectId: 'door' }, ['mobileDeviceId']],
      [{ mobileDeviceId: 'phone-empty', securedObjectId: 'door', tokenId: 'x' }, ['tokenId']],
    ] as [Record<string, string | number>, string[]][])('400 for %j naming %j', async (query, fields) => {
      const response = await checkRequest(query);
      expectProblem(response, 400);
      expect([...new Set(fieldsOf(response))]).toEqual(fields);
    });
  });

  it('decides the same credential as the lock simulator at every instant, command, clock offset, revocation and key change', async () => {
    const { acme, token } = tenants;
    await lock(t, token, 'vault');
    await device(t, token, 'phone-vault');
    // The lock is provisioned from the trust endpoint through its own bound client (docs/api-reference.md 8.1).
    const lockClientToken = await lockToken(t, acme, 'vault');
    const simulator = new LockSimulator(await lockTrust(t, acme, 'vault'));
    const syncSimulator = () =>
      simulator.sync(async (cursor) => {
        const response = await t.app.inject({ url: `/deviceapi/securedobjects/vault/sync${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ''}`, headers: bearer(lockClientToken) });
        expect(response.statusCode, response.body).toBe(200);
        return { answer: response.json() as SyncAnswer, more: String(response.headers.link ?? '').includes('rel="next"') };
      });
    await syncSimulator();

    const beginDate = now + HOUR + 250;
    const issued = await ticket(t, token, 'vault', 'phone-vault', { beginDate, endDate: beginDate + 10 * DAY, commands: ['open', 'tokn'] });
    const credential = (await downloadAs('phone-vault')).find((item) => item.id === issued.id)!.credential;
    const claims = decodeJwt(credential);
    const instants = [
      now,
      claims.nbf! * 1000 - 1,
      claims.nbf! * 1000,
      beginDate + DAY,
      claims.exp! * 1000 - 1,
      claims.exp! * 1000,
      beginDate + 10 * DAY,
      beginDate + 20 * DAY,
    ];
    /** The simulator's reason for each explain code a lock's own refusal can have. */
    const SAME: Record<string, LockDecisionReason[]> = {
      valid: ['ok'],
      'revocation-not-applied': ['ok'],
      'not-yet-valid': ['not-yet-valid'],
      expired: ['expired'],
      'credential-expired': ['expired'],
      'command-not-granted': ['command-not-granted'],
      revoked: ['revoked'],
      'key-not-published': ['unknown-key'],
      'key-not-known-yet': ['unknown-key'],
    };
    let compared = 0;
    async function expectAgreement(offsetMs = 0) {
      for (const at of instants) {
        for (const command of ['open', 'clos', 'tokn']) {
          const lockDecision = await simulator.decide(credential, command, at + offsetMs, 'btlespp');
          const explained = await check('phone-vault', 'vault', { at, command });
          const context = `at ${at} (${at - beginDate} ms after begin), ${command}, offset ${offsetMs}: ${JSON.stringify(explained.reasons)}`;
          expect(explained.decision, context).toBe(lockDecision.decision === 'open' ? 'allow' : 'deny');
          expect(explained.lockTime).toBe(at + offsetMs);
          expect(SAME[explained.tokens[0]!.reasons[0]!.code], context).toContain(lockDecision.reason);
          compared++;
        }
      }
    }
    await expectAgreement();

    // The lock's clock runs 45 s behind: both judge at the lock's time.
    now += 1000;
    await recordLockContact(t.database.db, acme.tenantId, 'vault', { seenAt: now, clockOffsetMs: -45_000 });
    instants.push(claims.nbf! * 1000 + 30_000, claims.nbf! * 1000 + 45_000, claims.exp! * 1000 + 30_000);
    await expectAgreement(-45_000);

    // Revoked: the simulator, not synced yet, still opens, and the explain says so; once synced and acknowledged, both refuse.
    expect((await call(t, token, { method: 'DELETE', url: `/operatorapi/tickets/${issued.id}` })).statusCode).toBe(200);
    await expectAgreement(-45_000);
    expect((await check('phone-vault', 'vault', { at: beginDate + DAY })).reasons[0]!.code).toBe('revocation-not-applied');
    await syncSimulator();
    expect(simulator.isRevoked(issued.id)).toBe(true);
    await recordLockContact(t.database.db, acme.tenantId, 'vault', { seenAt: now, appliedThrough: await changeSeqOf(issued.id) });
    await expectAgreement(-45_000);
    expect((await check('phone-vault', 'vault', { at: beginDate + DAY })).reasons[0]!.code).toBe('revoked');

    // A second ticket, then an emergency rotation that the lock learns by sync: both refuse the old key's credential.
    const second = await ticket(t, token, 'vault', 'phone-vault', { beginDate, endDate: beginDate + 10 * DAY, commands: ['open'] });
    const secondCredential = (await downloadAs('phone-vault')).find((item) => item.id === second.id)!.credential;
    const rotation = await call(t, await keyRotationToken(t.app, acme), { method: 'POST', url: '/operatorapi/ticket-keys/rotations', payload: { emergency: true } });
    expect(rotation.statusCode, rotation.body).toBe(201);
    await syncSimulator();
    // Its next sync acknowledges the new key set (docs/api-reference.md 8.4): explain no longer counts on the withdrawn key.
    now += 60_000;
    await syncSimulator();
    const at = beginDate + DAY;
    const lockDecision = await simulator.decide(secondCredential, 'open', at - 45_000, 'btlespp');
    const explained = await check('phone-vault', 'vault', { at });
    expect(lockDecision).toMatchObject({ decision: 'deny', reason: 'unknown-key' });
    expect(explained.tokens.find((token) => token.id === second.id)).toMatchObject({ decision: 'deny', reasons: [{ code: 'key-not-published' }, { code: 'clock-drift' }] });
    expect(explained.decision).toBe('deny');
    expect(compared).toBe(8 * 3 + 2 * 11 * 3 + 11 * 3);

    // docs/security-cases.md H53: another emergency rotation the lock has not synced since: a credential under the new
    // key is one it does not know. Both refuse it; once the lock synced and acknowledged, both open.
    const third = await ticket(t, token, 'vault', 'phone-vault', { beginDate, endDate: beginDate + 10 * DAY, commands: ['open'] });
    const again = await call(t, await keyRotationToken(t.app, acme), { method: 'POST', url: '/operatorapi/ticket-keys/rotations', payload: { emergency: true } });
    expect(again.statusCode, again.body).toBe(201);
    const thirdCredential = (await downloadAs('phone-vault')).find((item) => item.id === third.id)!.credential;
    const unknownKey = await simulator.decide(thirdCredential, 'open', at - 45_000, 'btlespp');
    expect(unknownKey).toMatchObject({ decision: 'deny', reason: 'unknown-key' });
    const notKnown = await check('phone-vault', 'vault', { at });
    expect(notKnown.tokens.find((token) => token.id === third.id)).toMatchObject({
      decision: 'deny',
      reasons: [{ code: 'key-not-known-yet', message: expect.stringContaining(again.json().kid) }, { code: 'clock-drift' }],
    });
    expect(notKnown.decision).toBe('deny');
    await syncSimulator();
    now += 60_000;
    await syncSimulator();
    expect(await simulator.decide(thirdCredential, 'open', at - 45_000, 'btlespp')).toMatchObject({ decision: 'open' });
    expect((await check('phone-vault', 'vault', { at })).decision).toBe('allow');
  });
});
