// Replacing a phone by a claim link, end to end (docs/api-reference.md 12, 11.4, docs/security-cases.md H58): the
// reference phone enrols from the link, downloads bound credentials and opens the reference lock; a claim that
// replaces it enrols the new phone and removes the old one in the same transaction, and after one sync the lock
// refuses the old phone while the new one opens.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockSimulator, type SyncAnswer } from '../../src/simulator/lock-simulator.js';
import { PhoneSimulator, type PhoneHttp } from '../../src/simulator/phone-simulator.js';
import { es256KeyPair, privateJwk } from '../../src/simulator/es256.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { accessTenant, lockGroup, permission, resident, v1, type AccessTenant } from '../helpers/access.js';
import { lockKeysToken, lockToken, trustWith } from '../helpers/device.js';
import { registerKey } from '../helpers/holder-keys.js';
import { bearer } from '../helpers/oauth.js';
import { lock } from '../helpers/operator.js';

const START = Date.UTC(2026, 2, 2, 9, 0, 0);
const DAY = 86_400_000;

describe('replacing a phone with a claim link', () => {
  let t: TestApp;
  let now = START;
  let acme: AccessTenant;
  let residentId: string;
  let front: LockSimulator;

  /** The phone's network: app.inject in place of fetch, on the service's public URL. */
  const http: PhoneHttp = async (request) => {
    const response = await t.app.inject({
      method: request.method,
      url: request.url.replace(t.config.PUBLIC_URL, ''),
      ...(request.headers ? { headers: request.headers } : {}),
      ...(request.body !== undefined ? { payload: request.body } : {}),
    });
    return { status: response.statusCode, body: response.body === '' ? null : response.json() };
  };

  async function sync(simulator: LockSimulator, id: string): Promise<void> {
    const token = await lockToken(t, acme.tenant, id);
    await simulator.sync(async (cursor) => {
      const response = await t.app.inject({ url: `/deviceapi/securedobjects/${id}/sync${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ''}`, headers: bearer(token) });
      expect(response.statusCode, response.body).toBe(200);
      return { answer: response.json() as SyncAnswer, more: String(response.headers.link ?? '').includes('rel="next"') };
    });
  }

  async function atTheDoor(phone: PhoneSimulator) {
    const shown = phone.present('front', front.hello(now), 'open', now);
    if (!('presentation' in shown)) throw new Error(`the phone showed nothing: ${shown.refused}`);
    return front.decide(shown.presentation.credential, 'open', now, 'btlespp', shown.presentation.proof);
  }

  async function claimLink(body: object): Promise<{ id: string; url: string }> {
    const response = await v1(t, acme.token, { method: 'POST', url: `/v1/residents/${residentId}/claims`, payload: body });
    expect(response.statusCode, response.body).toBe(201);
    return response.json();
  }

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4', CLAIM_RATE_LIMIT_PER_MINUTE: '0' }, { clock: () => now });
    acme = await accessTenant(t, 'replace');
    await lock(t, acme.operator, 'front');
    const lockKey = es256KeyPair();
    await registerKey(t, await lockKeysToken(t, acme.tenant, 'front'), 'securedobjects', 'front', lockKey);
    front = new LockSimulator((await trustWith(t, await lockToken(t, acme.tenant, 'front'), 'front')) as never, { key: privateJwk(lockKey) });
    const doors = await lockGroup(t, acme.token, 'doors', ['front']);
    residentId = (await resident(t, acme.token, 'Grace Hopper')).id;
    await permission(t, acme.token, residentId, doors.id, { beginDate: now - DAY, endDate: now + 30 * DAY });
  });
  afterAll(async () => {
    await t.close();
  });

  it('the old phone\'s credential is refused after one sync, its client and tickets are gone, and the new phone opens', async () => {
    // The first phone enrols from its link, downloads bound credentials and opens.
    const oldPhone = new PhoneSimulator();
    const first = await oldPhone.enrol((await claimLink({})).url, http, { name: 'old phone', atMs: now });
    const oldTokens = await oldPhone.download(http, now);
    expect(JSON.parse(Buffer.from(oldTokens[0]!.credential!.split('.')[1]!, 'base64url').toString())).toMatchObject({ cnf: { jkt: oldPhone.keyThumbprint } });
    expect(await atTheDoor(oldPhone)).toMatchObject({ decision: 'open', reason: 'ok' });

    // Lost: a claim that replaces it. The new phone enrols; the old device goes in the same transaction.
    now += 60_000;
    const replacing = await claimLink({ replaces: first.mobileDeviceId, note: 'lost phone' });
    const newPhone = new PhoneSimulator();
    const second = await newPhone.enrol(replacing.url, http, { atMs: now });
    const deviceRows = await t.database.db.query<{ id: string }>('SELECT id FROM mobile_devices WHERE tenant_id = $1 ORDER BY id', [acme.tenant.tenantId]);
    expect(deviceRows.rows.map((row) => row.id)).toEqual([second.mobileDeviceId]);
    const tickets = await t.database.db.query<{ mobile_device_id: string; revoked: boolean }>(
      'SELECT mobile_device_id, revoked_at IS NOT NULL AS revoked FROM tickets WHERE tenant_id = $1 ORDER BY created_at',
      [acme.tenant.tenantId],
    );
    expect(tickets.rows).toEqual([
      { mobile_device_id: first.mobileDeviceId, revoked: true },
      { mobile_device_id: second.mobileDeviceId, revoked: false },
    ]);
    const keyRevocations = await t.database.db.query<{ key_thumbprint: string }>('SELECT key_thumbprint FROM revoked_device_keys WHERE tenant_id = $1', [
      acme.tenant.tenantId,
    ]);
    expect(keyRevocations.rows).toEqual([{ key_thumbprint: oldPhone.keyThumbprint }]);
    const { rows: events } = await t.database.db.query<{ action: string; target: string }>(
      `SELECT action, target FROM audit_events WHERE tenant_id = $1 AND actor = $2 ORDER BY seq`,
      [acme.tenant.tenantId, `claim:${replacing.id}`],
    );
    // The new phone's tickets are appended by the statement that makes them; the old phone's removal, its revoked
    // tickets first, with the claim's other events at the end of the transaction (removal.ts).
    expect(events.map((event) => event.action)).toEqual([
      'claim.opened',
      'ticket.created',
      'ticket.revoked',
      'mobile_device.deleted',
      'client.deleted',
      'mobile_device.created',
      'resident.device_added',
      'mobile_device.key_registered',
      'client.created',
      'claim.claimed',
    ]);
    // The old phone's client is gone: its key no longer gets a token.
    await expect(oldPhone.accessToken(http, now)).rejects.toMatchObject({ status: 401 });

    // The lock has a revocation to learn (docs/api-reference.md 8.4), and until it syncs it still opens for the old phone.
    const lockState = await t.app.inject({ url: '/operatorapi/securedobjects/front', headers: bearer(acme.operator) });
    expect(lockState.json()).toMatchObject({ pendingKeyRevocations: 1 });
    expect(await atTheDoor(oldPhone)).toMatchObject({ decision: 'open' });
    await sync(front, 'front');
    expect(await atTheDoor(oldPhone)).toMatchObject({ decision: 'deny' });
    expect(front.isKeyRevoked(oldPhone.keyThumbprint)).toBe(true);

    // The new phone downloads credentials bound to its own key and opens.
    await newPhone.download(http, now);
    expect(await atTheDoor(newPhone)).toMatchObject({ decision: 'open', reason: 'ok' });
  });
});
