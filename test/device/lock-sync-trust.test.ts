// What reaches an online lock through sync besides tickets (docs/api-reference.md 8.1, 4.1): the tenant's key set after a
// rotation, and, for a deleted lock's client, every revocation the deletion caused (docs/security-cases.md G43).
import { decodeProtectedHeader } from 'jose';
import { createTicketKeyService } from '../../src/services/keys/ticket-keys.service.js';
import { LockSimulator, type SyncAnswer as LockSyncAnswer } from '../../src/simulator/lock-simulator.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { download, lockToken, phoneToken, sync, syncRequest } from '../helpers/device.js';
import { bearer, clientToken, createClient, keyRotationToken } from '../helpers/oauth.js';
import { call, expectProblem, lock, ticket } from '../helpers/operator.js';
import { twoTenants, type TwoTenants } from '../helpers/tenants.js';

interface SyncAnswer {
  tokens: { id: string }[];
  revocations: { tokenId: string }[];
  cursor: string;
  serial: number;
  keys?: { keys: { kid: string }[] };
  decommissioned?: true;
}

describe('sync: keys and decommissioned locks', () => {
  let t: TestApp;
  let tenants: TwoTenants;
  const syncOf = async (token: string, id: string, cursor?: string) => (await sync(t, token, id, cursor, 1000)) as unknown as SyncAnswer;

  beforeAll(async () => {
    t = await buildTestApp();
    tenants = await twoTenants(t, { acme: { locks: ['gate', 'hall'], devices: ['phone-1', 'phone-2'] }, other: { locks: ['gate'] } });
  });
  afterAll(async () => {
    await t.close();
  });

  it('sends the key set on a full sync and after a rotation, once: the cursor moves past the key change', async () => {
    const { acme, token } = tenants;
    const lockAuth = await lockToken(t, acme, 'hall');
    const full = await syncOf(lockAuth, 'hall');
    expect(full.keys?.keys.length).toBeGreaterThan(0);
    const quiet = await syncOf(lockAuth, 'hall', full.cursor);
    expect(quiet).toEqual({ tokens: [], revocations: [], cursor: full.cursor, serial: full.serial, holderBinding: 'optional', revokedKeys: [] });

    const rotation = await call(t, await keyRotationToken(t.app, acme), { method: 'POST', url: '/operatorapi/ticket-keys/rotations', payload: {} });
    expect(rotation.statusCode, rotation.body).toBe(201);
    const announced = rotation.json().kid as string;
    const afterRotation = await syncOf(lockAuth, 'hall', full.cursor);
    expect(afterRotation.keys?.keys.map((key) => key.kid)).toContain(announced);
    expect(afterRotation.cursor).not.toBe(full.cursor);
    expect(afterRotation.serial).toBeGreaterThan(full.serial);
    const next = await syncOf(lockAuth, 'hall', afterRotation.cursor);
    expect(next.keys).toBeUndefined();
    expect(next.cursor).toBe(afterRotation.cursor);

    // Announced, not signing yet: a credential made now still names the old key, and the phone's revocation list
    // already carries the new one to locks that are never online.
    await ticket(t, token, 'hall', 'phone-1');
    const [downloaded] = (await download(t, await phoneToken(t, acme, 'phone-1'), 'phone-1')) as unknown as { credential: string; revocationList: string }[];
    expect(decodeProtectedHeader(downloaded!.credential).kid).not.toBe(announced);
    const listClaims = JSON.parse(Buffer.from(downloaded!.revocationList.split('.')[1]!, 'base64url').toString()) as { keys: { keys: { kid: string }[] }; serial: number };
    expect(listClaims.keys.keys.map((key) => key.kid)).toContain(announced);
    expect(listClaims.serial).toBeGreaterThanOrEqual(afterRotation.serial);
  });

  it('lets a deleted lock\'s client sync every revocation its deletion caused, with decommissioned: true, and nothing of a re-created lock (docs/security-cases.md G43)', async () => {
    const { acme, other } = tenants;
    const token = await clientToken(t.app, acme);
    const lockClient = await createClient(t.app, acme, ['sync'], { securedObjectId: 'gate' });
    const lockAuth = await clientToken(t.app, lockClient);
    const kept1 = await ticket(t, token, 'gate', 'phone-1');
    const kept2 = await ticket(t, token, 'gate', 'phone-2');
    const neverDownloaded = await ticket(t, token, 'gate', 'phone-2', { beginDate: t.app.services.clock() + 30 * 86400_000, endDate: t.app.services.clock() + 40 * 86400_000 });
    await download(t, await phoneToken(t, acme, 'phone-1'), 'phone-1');
    await download(t, await phoneToken(t, acme, 'phone-2'), 'phone-2');
    const before = await syncOf(lockAuth, 'gate');
    expect(before.tokens.map((item) => item.id).sort()).toEqual([kept1.id, kept2.id, neverDownloaded.id].sort());

    expect((await call(t, token, { method: 'DELETE', url: '/operatorapi/securedobjects/gate' })).statusCode).toBe(204);
    // The same client (a fresh token: the deletion narrowed it to sync) learns the revocations it needs.
    const decommissionedAuth = await clientToken(t.app, lockClient, 'sync');
    const after = await syncOf(decommissionedAuth, 'gate', before.cursor);
    expect(after.decommissioned).toBe(true);
    expect(after.tokens).toEqual([]);
    expect(after.revocations.map((item) => item.tokenId).sort()).toEqual([kept1.id, kept2.id].sort());
    const fromScratch = await syncOf(decommissionedAuth, 'gate');
    expect(fromScratch.decommissioned).toBe(true);
    expect(fromScratch.revocations.map((item) => item.tokenId).sort()).toEqual([kept1.id, kept2.id].sort());
    // It may not be provisioned again.
    const trust = await t.app.inject({ url: '/deviceapi/securedobjects/gate/trust', headers: bearer(decommissionedAuth) });
    expect(expectProblem(trust, 403).detail).toMatch(/deleted/);
    // An unbound sync client, and another tenant's client of its own "gate", see no deleted lock.
    const hub = await clientToken(t.app, await createClient(t.app, acme, ['sync']));
    expectProblem(await syncRequest(t, hub, 'gate'), 404);
    const othersGate = await syncOf(await lockToken(t, other, 'gate'), 'gate');
    expect(othersGate.decommissioned).toBeUndefined();
    expect(othersGate.revocations).toEqual([]);

    // The id is used again for a new lock: the old client never sees its tickets; the new lock's client does.
    await lock(t, token, 'gate');
    const fresh = await ticket(t, token, 'gate', 'phone-1');
    const oldView = await syncOf(decommissionedAuth, 'gate', after.cursor);
    expect(oldView).toMatchObject({ tokens: [], revocations: [], decommissioned: true });
    const newView = await syncOf(await lockToken(t, acme, 'gate'), 'gate');
    expect(newView.decommissioned).toBeUndefined();
    expect(newView.tokens.map((item) => item.id)).toEqual([fresh.id]);
  });

  it('re-signs every credential after an emergency rotation, and an online lock that synced refuses the old ones at once', async () => {
    const { acme } = tenants;
    const token = await clientToken(t.app, acme);
    await lock(t, token, 'vault');
    const issued = await ticket(t, token, 'vault', 'phone-2');
    const phone = await phoneToken(t, acme, 'phone-2');
    const before = ((await download(t, phone, 'phone-2')) as unknown as { id: string; credential: string }[]).find((item) => item.id === issued.id)!;
    const lockAuth = await lockToken(t, acme, 'vault');
    const trust = (await t.app.inject({ url: '/deviceapi/securedobjects/vault/trust', headers: bearer(lockAuth) })).json();
    const door = new LockSimulator(trust);
    const first = await syncOf(lockAuth, 'vault');
    door.applySync(first as unknown as LockSyncAnswer);
    const at = t.app.services.clock() + 1000;
    expect((await door.decide(before.credential, 'open', at)).decision).toBe('open');

    const rotation = await call(t, await keyRotationToken(t.app, acme), { method: 'POST', url: '/operatorapi/ticket-keys/rotations', payload: { emergency: true } });
    expect(rotation.statusCode, rotation.body).toBe(201);
    const newKid = rotation.json().kid as string;
    door.applySync((await syncOf(lockAuth, 'vault', first.cursor)) as unknown as LockSyncAnswer);
    expect(door.kids).toContain(newKid);
    expect(door.kids).not.toContain(decodeProtectedHeader(before.credential).kid);
    expect(await door.decide(before.credential, 'open', at)).toMatchObject({ decision: 'deny', reason: 'unknown-key' });
    // The phone's next download signs the stored credential anew with the new key: the door opens again.
    const after = ((await download(t, phone, 'phone-2')) as unknown as { id: string; credential: string }[]).find((item) => item.id === issued.id)!;
    expect(decodeProtectedHeader(after.credential).kid).toBe(newKid);
    expect((await door.decide(after.credential, 'open', at)).decision).toBe('open');
  });

  it('answers the key set the database has, even when this instance has not heard of a rotation made elsewhere yet', async () => {
    const { acme } = tenants;
    const token = await clientToken(t.app, acme);
    await lock(t, token, 'annex');
    const lockAuth = await lockToken(t, acme, 'annex');
    const first = await syncOf(lockAuth, 'annex');
    // This instance stops following key changes (a dropped LISTEN connection, or the NOTIFY not delivered yet), and
    // another process (the CLI, another instance) withdraws the tenant's keys in an emergency.
    await t.app.services.ticketKeys.stop();
    try {
      const elsewhere = createTicketKeyService({ db: t.database.db, secretsKey: t.secretsKey, clock: Date.now, alg: 'EdDSA', retentionMs: 7 * 86400_000, announceMs: 7 * 86400_000 });
      const rotated = await elsewhere.rotate(acme.tenantId, { emergency: true });
      const answer = await syncOf(lockAuth, 'annex', first.cursor);
      expect(answer.keys?.keys.map((key) => key.kid)).toEqual([rotated.kid]);
      // This instance caught up while answering: it signs with the new key, never with the withdrawn one.
      await ticket(t, token, 'annex', 'phone-1');
      const downloaded = (await download(t, await phoneToken(t, acme, 'phone-1'), 'phone-1')) as unknown as { securedObjectId: string; credential: string }[];
      expect(decodeProtectedHeader(downloaded.find((item) => item.securedObjectId === 'annex')!.credential).kid).toBe(rotated.kid);
    } finally {
      await t.app.services.ticketKeys.start(60_000);
    }
  });
});
