// Lock telemetry end to end (docs/api-reference.md 8.4–8.6) with the simulator as the lock: a revoked phone's door may still
// open until the lock learns the revocation; explain says so, then says denied once the lock has applied it, and the
// lock's own access log shows the denied attempt.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockSimulator, type LockProvisioning, type SyncAnswer } from '../../src/simulator/lock-simulator.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { download, lockToken, phoneToken, sync } from '../helpers/device.js';
import { bearer, clientToken, createTenant, type TenantFixture } from '../helpers/oauth.js';
import { call, device, lock, ticket } from '../helpers/operator.js';

const START = Date.UTC(2026, 2, 2, 8, 0, 0, 0);

describe('lock telemetry end to end', () => {
  let now = START;
  let t: TestApp;
  let acme: TenantFixture;
  let operator: string;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' }, { clock: () => now });
    acme = await createTenant(t.app, 'acme');
    operator = await clientToken(t.app, acme);
    await lock(t, operator, 'front-door');
    await device(t, operator, 'alice-phone');
  });
  afterAll(async () => {
    await t.close();
  });

  const get = async (url: string) => {
    const response = await call(t, operator, { method: 'GET', url });
    expect(response.statusCode, response.body).toBe(200);
    return response.json() as unknown;
  };
  const explain = () =>
    get(`/operatorapi/access-checks?mobileDeviceId=alice-phone&securedObjectId=front-door&at=${now}`) as Promise<{
      decision: string;
      reasons: { code: string; message: string }[];
    }>;

  it('revoke → "may still open" → the lock learns and refuses → explain says denied → the lock\'s log shows the refusal', async () => {
    const granted = await ticket(t, operator, 'front-door', 'alice-phone', { endDate: now + 30 * 86_400_000 });
    const [held] = await download(t, await phoneToken(t, acme, 'alice-phone'), 'alice-phone');
    const credential = held!.credential!;

    // The installer provisions the lock through its own client; the lock syncs and opens for Alice.
    const doorToken = await lockToken(t, acme, 'front-door');
    const trust = (await t.app.inject({ url: '/deviceapi/securedobjects/front-door/trust', headers: bearer(doorToken) })).json() as LockProvisioning;
    const door = new LockSimulator(trust);
    const fetchPage = async (cursor: string | undefined) => {
      const answer = await sync(t, doorToken, 'front-door', cursor);
      return { answer: answer as unknown as SyncAnswer, more: (answer as unknown as { more: boolean }).more };
    };
    await door.sync(fetchPage);
    expect(await door.decide(credential, 'open', now)).toMatchObject({ decision: 'open', ticketId: granted.id });
    expect(await explain()).toMatchObject({ decision: 'allow', reasons: [{ code: 'valid' }] });

    // Revoked on the server; the lock does not know yet: the door may still open for her.
    now += 60_000;
    const revoked = await call(t, operator, { method: 'DELETE', url: `/operatorapi/tickets/${granted.id}` });
    expect(revoked.statusCode, revoked.body).toBe(200);
    const pending = await explain();
    expect(pending.decision).toBe('allow');
    expect(pending.reasons.map((reason) => reason.code)).toEqual(['revocation-not-applied']);
    expect(pending.reasons[0]!.message).toContain('MAY STILL OPEN');
    expect(await door.decide(credential, 'open', now)).toMatchObject({ decision: 'open' });
    expect(await get('/operatorapi/securedobjects/front-door')).toMatchObject({ pendingRevocations: 1 });
    expect(await get('/operatorapi/revocations?applied=false&securedObjectId=front-door')).toEqual([expect.objectContaining({ id: granted.id, status: 'REVOKED' })]);

    // The lock syncs, learns the revocation and refuses her from then on.
    now += 10_000;
    await door.sync(fetchPage);
    expect(door.isRevoked(granted.id)).toBe(true);
    now += 5_000;
    expect(await door.decide(credential, 'open', now)).toEqual({ decision: 'deny', reason: 'revoked', ticketId: granted.id });

    // It uploads its log with the position it applied: the server now knows the revocation reached the door.
    now += 5_000;
    const upload = door.accessLogUpload(now)!;
    expect(upload.appliedSerial).toBe(door.serial);
    const uploaded = await t.app.inject({ method: 'POST', url: '/deviceapi/securedobjects/front-door/accesslog', headers: bearer(doorToken), payload: upload });
    expect(uploaded.statusCode, uploaded.body).toBe(200);
    expect(uploaded.json()).toEqual({ accepted: 3, duplicates: 0, gaps: [] });
    door.acknowledgeAccessLog(upload.entries.at(-1)!.entryNo);

    expect(await get('/operatorapi/securedobjects/front-door')).toMatchObject({ pendingRevocations: 0, lastSeenTime: now, appliedThrough: door.serial });
    expect(await get(`/operatorapi/tickets/${granted.id}`)).toMatchObject({ status: 'REVOKED', revocationAppliedTime: now });
    expect(await get('/operatorapi/revocations?applied=false&securedObjectId=front-door')).toEqual([]);

    const applied = await explain();
    expect(applied.decision).toBe('deny');
    expect(applied.reasons.map((reason) => reason.code)).toEqual(['revoked']);

    // The operator sees the refused attempt, tied to Alice's phone and her revoked ticket.
    const refused = await get('/operatorapi/accesslog?securedObjectId=front-door&result=denied');
    expect(refused).toEqual([
      expect.objectContaining({
        securedObjectId: 'front-door',
        entryNo: 3,
        tokenId: granted.id,
        mobileDeviceId: 'alice-phone',
        command: 'open',
        result: 'denied',
        reason: 'revoked',
        via: 'lock',
        receivedTime: now,
      }),
    ]);
  });
});
