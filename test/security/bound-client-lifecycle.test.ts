// docs/security-cases.md G42: what becomes of the OAuth clients bound to a deleted mobile device (they are deleted,
// docs/api-reference.md 4.2) or a deleted lock (they may only sync, up to the deletion's change number, docs/api-reference.md 4.1).
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { findLockForClient } from '../../src/db/repositories/lock-sync.repo.js';
import { anotherInstance, buildTestApp, type TestApp } from '../helpers/app.js';
import { expectNothingChanged } from '../helpers/database-state.js';
import { changeCounter, downloadRequest, syncRequest } from '../helpers/device.js';
import {
  basic,
  clientToken,
  createClient,
  form,
  tokenRequest,
  type ClientFixture,
  type TenantFixture,
} from '../helpers/oauth.js';
import { auditEvents, call, device, expectProblem, lock, ticket, walk } from '../helpers/operator.js';
import { expectOAuthError } from '../helpers/security.js';
import { twoTenants } from '../helpers/tenants.js';
import { postgresTestUrl } from '../helpers/postgres-url.js';

let t: TestApp;
let acme: TenantFixture;
let other: TenantFixture;
let operator: string;
let otherOperator: string;

beforeAll(async () => {
  t = await buildTestApp({ BCRYPT_COST: '4', TOKEN_RATE_LIMIT_PER_MINUTE: '100000' });
  ({ acme, other, token: operator, otherToken: otherOperator } = await twoTenants(t));
});
afterAll(async () => {
  await t.close();
});

const removeDevice = (id: string, auth = operator) =>
  call(t, auth, { method: 'DELETE', url: `/operatorapi/mobiledevices/${encodeURIComponent(id)}` });
const removeLock = (id: string, auth = operator) =>
  call(t, auth, { method: 'DELETE', url: `/operatorapi/securedobjects/${encodeURIComponent(id)}` });
const getClient = (clientId: string, auth = operator) => call(t, auth, { method: 'GET', url: `/operatorapi/oauthclients/${clientId}` });

/** RFC 7662 introspection by `client` of `token` (a client learns about its own tokens, docs/api-reference.md 3.3). */
async function introspect(app: App, client: ClientFixture, token: string): Promise<Record<string, unknown>> {
  const response = await app.inject({
    method: 'POST',
    url: '/oauth/introspect',
    headers: { authorization: basic(client.clientId, client.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
    payload: form({ token }),
  });
  expect(response.statusCode, response.body).toBe(200);
  return response.json();
}

async function clientRow(clientId: string): Promise<{ tenant_id: string; decommissioned_seq: number | null } | undefined> {
  const { rows } = await t.database.db.query<{ tenant_id: string; decommissioned_seq: number | null }>(
    'SELECT tenant_id, decommissioned_seq FROM oauth_clients WHERE client_id = $1',
    [clientId],
  );
  return rows[0];
}

async function revocationKinds(clientId: string): Promise<string[]> {
  const { rows } = await t.database.db.query<{ kind: string }>('SELECT kind FROM token_revocations WHERE subject = $1 ORDER BY seq', [clientId]);
  return rows.map((row) => row.kind);
}

/** What expectNothingChanged does not count: revocations and decommissioned clients. */
async function clientState(): Promise<{ revocations: number; decommissioned: string }> {
  const { rows } = await t.database.db.query<{ revocations: number; decommissioned: string }>(
    `SELECT (SELECT count(*) FROM token_revocations)::int AS revocations,
            (SELECT coalesce(string_agg(client_id || '=' || decommissioned_seq, ',' ORDER BY client_id), '')
               FROM oauth_clients WHERE decommissioned_seq IS NOT NULL) AS decommissioned`,
  );
  return rows[0]!;
}

/** The ticket ids the `ticket.revoked` events of one request name (a removal's chunks, docs/api-reference.md 10). */
async function revokedTicketIds(requestId: string): Promise<string[]> {
  const { rows } = await t.database.db.query<{ id: string }>(
    `SELECT jsonb_array_elements_text(data->'ticketIds') AS id FROM audit_events WHERE request_id = $1 AND action = 'ticket.revoked'`,
    [requestId],
  );
  return rows.map((row) => row.id).sort();
}

const invalidToken = (realm: string) => `Bearer realm="${realm}", error="invalid_token", error_description="the access token has been revoked"`;

describe('G42: clients bound to a deleted mobile device are deleted with it (docs/api-reference.md 4.2)', () => {
  it('refuses them at the token endpoint and their access tokens at once; revokes and audits each, in the same change', async () => {
    await lock(t, operator, 'm-door');
    await device(t, operator, 'm-phone');
    await device(t, operator, 'm-kept');
    const doomedTicket = await ticket(t, operator, 'm-door', 'm-phone');
    const keptTicket = await ticket(t, operator, 'm-door', 'm-kept');
    const first = await createClient(t.app, acme, ['tokens:download']);
    const bound = await createClient(t.app, acme, ['tokens:download'], { mobileDeviceId: 'm-phone' });
    const second = await createClient(t.app, acme, ['tokens:download', 'sync'], { mobileDeviceId: 'm-phone' });
    const keptDevice = await createClient(t.app, acme, ['tokens:download'], { mobileDeviceId: 'm-kept' });
    const unbound = await createClient(t.app, acme, ['sync', 'devices:read']);
    const boundToken = await clientToken(t.app, bound);
    const keptToken = await clientToken(t.app, keptDevice);
    const unboundToken = await clientToken(t.app, unbound);
    expect((await downloadRequest(t, boundToken, 'm-phone')).statusCode).toBe(200);

    const removed = await removeDevice('m-phone');
    expect(removed.statusCode, removed.body).toBe(204);

    // At once, on this instance: the token endpoint and the bearer check.
    for (const client of [bound, second]) {
      expectOAuthError(await tokenRequest(t.app, client, { grant_type: 'client_credentials' }), 401, 'invalid_client', 'Client authentication failed.');
      expectProblem(await getClient(client.clientId), 404);
      expect(await clientRow(client.clientId)).toBeUndefined();
      expect(await revocationKinds(client.clientId)).toEqual(['client']);
    }
    const refused = await downloadRequest(t, boundToken, 'm-phone');
    expectProblem(refused, 401);
    expect(refused.headers['www-authenticate']).toBe(invalidToken('deviceapi'));
    expect(await introspect(t.app, unbound, boundToken)).toEqual({ active: false });

    // Another device's client, an unbound client and their tokens are untouched.
    for (const client of [first, keptDevice, unbound]) {
      expect(await clientRow(client.clientId)).toMatchObject({ tenant_id: acme.tenantId, decommissioned_seq: null });
      expect(await revocationKinds(client.clientId)).toEqual([]);
      expect((await tokenRequest(t.app, client, { grant_type: 'client_credentials' })).statusCode).toBe(200);
    }
    const kept = await downloadRequest(t, keptToken, 'm-kept');
    expect(kept.statusCode, kept.body).toBe(200);
    expect(kept.json().map((item: { id: string }) => item.id)).toEqual([keptTicket.id]);
    expect((await syncRequest(t, unboundToken, 'm-door')).statusCode).toBe(200);

    // One change: the device, its ticket and both clients, audited like a client deletion, by the same actor.
    const events = await auditEvents(t, { requestId: String(removed.headers['x-request-id']) });
    expect(events.map((event) => [event.action, event.target]).sort()).toEqual(
      [
        ['mobile_device.deleted', 'mobile_device:m-phone'],
        // A removal's revocations are one event per 1,000 tickets, targeting the removal (docs/api-reference.md 10).
        ['ticket.revoked', 'mobile_device:m-phone'],
        ['client.deleted', `client:${bound.clientId}`],
        ['client.deleted', `client:${second.clientId}`],
      ].sort(),
    );
    expect(await revokedTicketIds(String(removed.headers['x-request-id']))).toEqual([doomedTicket.id]);
    for (const event of events) expect(event).toMatchObject({ tenant_id: acme.tenantId, actor: `client:${acme.clientId}` });
    expect(new Set(events.map((event) => event.time)).size).toBe(1);
  });

  it('re-creating the id for someone else never lets the old phone\'s client download; the new device starts with no client', async () => {
    await lock(t, operator, 'r-door');
    await device(t, operator, 'r-phone', 'Old owner');
    const oldClient = await createClient(t.app, acme, ['tokens:download'], { mobileDeviceId: 'r-phone' });
    const oldToken = await clientToken(t.app, oldClient);
    expect((await removeDevice('r-phone')).statusCode).toBe(204);

    await device(t, operator, 'r-phone', 'New owner');
    const theirs = await ticket(t, operator, 'r-door', 'r-phone');

    const stale = await downloadRequest(t, oldToken, 'r-phone');
    expectProblem(stale, 401);
    expect(stale.body).not.toContain(theirs.id);
    expectOAuthError(await tokenRequest(t.app, oldClient, { grant_type: 'client_credentials' }), 401, 'invalid_client');
    const { rows } = await t.database.db.query<{ downloaded_at: number | null }>('SELECT downloaded_at FROM tickets WHERE id = $1', [theirs.id]);
    expect(rows[0]!.downloaded_at).toBeNull();

    // The new device has no client until the operator binds one; that one downloads the new owner's ticket.
    const listed = await walk<{ clientId: string; mobileDeviceId?: string }>(t, operator, '/operatorapi/oauthclients');
    expect(listed.items.filter((client) => client.mobileDeviceId === 'r-phone')).toEqual([]);
    const newToken = await clientToken(t.app, await createClient(t.app, acme, ['tokens:download'], { mobileDeviceId: 'r-phone' }));
    const fresh = await downloadRequest(t, newToken, 'r-phone');
    expect(fresh.statusCode, fresh.body).toBe(200);
    expect(fresh.json().map((item: { id: string }) => item.id)).toEqual([theirs.id]);
  });

  it('deleting tenant A\'s device leaves tenant B\'s device with the same id, its client and its tokens alone', async () => {
    await device(t, operator, 'twin-phone');
    await device(t, otherOperator, 'twin-phone');
    await lock(t, otherOperator, 'their-door');
    const theirTicket = await ticket(t, otherOperator, 'their-door', 'twin-phone');
    const ours = await createClient(t.app, acme, ['tokens:download'], { mobileDeviceId: 'twin-phone' });
    const theirs = await createClient(t.app, other, ['tokens:download'], { mobileDeviceId: 'twin-phone' });
    const theirToken = await clientToken(t.app, theirs);

    expect((await removeDevice('twin-phone')).statusCode).toBe(204);

    expect(await clientRow(ours.clientId)).toBeUndefined();
    expect(await clientRow(theirs.clientId)).toMatchObject({ tenant_id: other.tenantId, decommissioned_seq: null });
    expect(await revocationKinds(theirs.clientId)).toEqual([]);
    expect((await tokenRequest(t.app, theirs, { grant_type: 'client_credentials' })).statusCode).toBe(200);
    const download = await downloadRequest(t, theirToken, 'twin-phone');
    expect(download.statusCode, download.body).toBe(200);
    expect(download.json().map((item: { id: string }) => item.id)).toEqual([theirTicket.id]);
    expect((await getClient(theirs.clientId, otherOperator)).statusCode).toBe(200);
  });

  it('a client bound while the device is being deleted is deleted with it or refused, never left bound to nothing', async () => {
    for (let round = 0; round < 8; round++) {
      const id = `race-phone-${round}`;
      await device(t, operator, id);
      const [created, removed] = await Promise.allSettled([
        createClient(t.app, acme, ['tokens:download'], { mobileDeviceId: id }),
        removeDevice(id),
      ]);
      expect(removed.status === 'fulfilled' && removed.value.statusCode).toBe(204);
      if (created.status === 'fulfilled') {
        expect(await clientRow(created.value.clientId)).toBeUndefined();
        expectOAuthError(await tokenRequest(t.app, created.value, { grant_type: 'client_credentials' }), 401, 'invalid_client');
      } else {
        expect(created.reason).toMatchObject({ status: 422 });
      }
    }
    const { rows } = await t.database.db.query<{ orphans: number }>(
      `SELECT count(*)::int AS orphans FROM oauth_clients c
        WHERE c.mobile_device_id IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM mobile_devices d WHERE d.tenant_id = c.tenant_id AND d.id = c.mobile_device_id)`,
    );
    expect(rows[0]!.orphans).toBe(0);
  });
});

describe('G42: clients bound to a deleted lock may only sync, up to the deletion (docs/api-reference.md 4.1)', () => {
  it('marks each with the deletion\'s change number, narrows its grant to sync, refuses its wider tokens at once, audits it', async () => {
    await lock(t, operator, 'd-door');
    await device(t, operator, 'd-phone');
    const revokedTicket = await ticket(t, operator, 'd-door', 'd-phone');
    const wide = await createClient(t.app, acme, ['sync', 'devices:read'], { securedObjectId: 'd-door' });
    const syncOnly = await createClient(t.app, acme, ['sync'], { securedObjectId: 'd-door' });
    const noSync = await createClient(t.app, acme, ['devices:read'], { securedObjectId: 'd-door' });
    const unbound = await createClient(t.app, acme, ['sync', 'devices:read']);
    const wideToken = await clientToken(t.app, wide);
    const syncOnlyToken = await clientToken(t.app, syncOnly, 'sync');
    const unboundToken = await clientToken(t.app, unbound);
    expect(decodeJwt(wideToken).scope).toBe('sync devices:read keys:register');
    const before = await changeCounter(t, acme.tenantId);

    const removed = await removeLock('d-door');
    expect(removed.statusCode, removed.body).toBe(204);

    // The change number of the deleting transaction: the one its ticket revocation carries too.
    const seq = await changeCounter(t, acme.tenantId);
    expect(seq).toBe(before + 1);
    const { rows: revoked } = await t.database.db.query<{ change_seq: number }>('SELECT change_seq FROM tickets WHERE id = $1', [revokedTicket.id]);
    expect(Number(revoked[0]!.change_seq)).toBe(seq);
    for (const client of [wide, syncOnly, noSync]) {
      expect(await clientRow(client.clientId)).toEqual({ tenant_id: acme.tenantId, decommissioned_seq: seq });
      expect((await findLockForClient(t.database.db, acme.tenantId, 'd-door', client.clientId)).decommissionedSeq).toBe(seq);
      expect(await revocationKinds(client.clientId)).toEqual(['client-decommissioned']);
    }
    // The repository answers per tenant: another tenant never reads it.
    expect((await findLockForClient(t.database.db, other.tenantId, 'd-door', wide.clientId)).decommissionedSeq).toBeNull();
    expect(await clientRow(unbound.clientId)).toMatchObject({ decommissioned_seq: null });
    expect(await revocationKinds(unbound.clientId)).toEqual([]);

    // The grant: whatever is asked is narrowed to sync; nothing left of it is invalid_scope, saying why.
    for (const scope of [undefined, 'sync devices:read', 'sync']) {
      const granted = await tokenRequest(t.app, wide, { grant_type: 'client_credentials', ...(scope ? { scope } : {}) });
      expect(granted.statusCode, granted.body).toBe(200);
      expect(granted.json().scope).toBe('sync');
      expect(decodeJwt(granted.json().access_token)).toMatchObject({ scope: 'sync', aud: 'deviceapi', secured_object_id: 'd-door' });
    }
    const narrowed = await clientToken(t.app, wide);
    const refusedScope = expectOAuthError(await tokenRequest(t.app, wide, { grant_type: 'client_credentials', scope: 'devices:read' }), 400, 'invalid_scope');
    expect(refusedScope.error_description).toMatch(/was deleted; only the scope sync remains/);
    expect(expectOAuthError(await tokenRequest(t.app, noSync, { grant_type: 'client_credentials' }), 400, 'invalid_scope').error_description).toMatch(
      /was deleted/,
    );
    // A scope it never had is refused as before.
    expect(
      expectOAuthError(await tokenRequest(t.app, wide, { grant_type: 'client_credentials', scope: 'sync tokens:create' }), 400, 'invalid_scope')
        .error_description,
    ).toBe('The client may not request: tokens:create.');

    // The token issued before, with more than sync, is refused at once; one with sync only still carries what it may.
    const stale = await syncRequest(t, wideToken, 'd-door');
    expectProblem(stale, 401);
    expect(stale.headers['www-authenticate']).toBe(invalidToken('deviceapi'));
    expect(await introspect(t.app, wide, wideToken)).toEqual({ active: false });
    expect(await introspect(t.app, wide, narrowed)).toMatchObject({ active: true, scope: 'sync', client_id: wide.clientId });
    expect(await introspect(t.app, syncOnly, syncOnlyToken)).toMatchObject({ active: true, scope: 'sync' });
    // What a sync of a decommissioned client answers is docs/api-reference.md 4.1's; here only that the bearer check lets it in.
    expect((await syncRequest(t, narrowed, 'd-door')).statusCode).not.toBe(401);
    // The unbound client keeps its token and its scopes.
    expect(await introspect(t.app, unbound, unboundToken)).toMatchObject({ active: true, scope: 'sync devices:read' });
    expect((await tokenRequest(t.app, unbound, { grant_type: 'client_credentials' })).json().scope).toBe('sync devices:read');

    // The Operator API shows it.
    const read = await getClient(wide.clientId);
    expect(read.statusCode).toBe(200);
    expect(read.json()).toStrictEqual({
      clientId: wide.clientId,
      name: 'test client',
      scopes: ['sync', 'devices:read', 'keys:register'],
      securedObjectId: 'd-door',
      creationDate: expect.any(Number),
      decommissioned: true,
    });
    expect((await getClient(unbound.clientId)).json()).not.toHaveProperty('decommissioned');
    const listed = await walk<{ clientId: string; decommissioned?: boolean }>(t, operator, '/operatorapi/oauthclients');
    expect(listed.items.filter((client) => client.decommissioned).map((client) => client.clientId).sort()).toEqual(
      expect.arrayContaining([wide.clientId, syncOnly.clientId, noSync.clientId].sort()),
    );
    expect(listed.items.find((client) => client.clientId === unbound.clientId)).not.toHaveProperty('decommissioned');

    const events = await auditEvents(t, { requestId: String(removed.headers['x-request-id']) });
    expect(events.map((event) => [event.action, event.target]).sort()).toEqual(
      [
        ['secured_object.deleted', 'secured_object:d-door'],
        ['ticket.revoked', 'secured_object:d-door'],
        ['client.decommissioned', `client:${wide.clientId}`],
        ['client.decommissioned', `client:${syncOnly.clientId}`],
        ['client.decommissioned', `client:${noSync.clientId}`],
      ].sort(),
    );
    expect(await revokedTicketIds(String(removed.headers['x-request-id']))).toEqual([revokedTicket.id]);
    for (const event of events) expect(event).toMatchObject({ tenant_id: acme.tenantId, actor: `client:${acme.clientId}` });
  });

  it('keeps the older number when a re-created lock with the same id is deleted again; the new lock\'s client gets the new one', async () => {
    await lock(t, operator, 'again-door');
    const first = await createClient(t.app, acme, ['sync'], { securedObjectId: 'again-door' });
    expect((await removeLock('again-door')).statusCode).toBe(204);
    const firstSeq = await changeCounter(t, acme.tenantId);
    expect(await clientRow(first.clientId)).toMatchObject({ decommissioned_seq: firstSeq });

    await lock(t, operator, 'again-door');
    const second = await createClient(t.app, acme, ['sync', 'devices:read'], { securedObjectId: 'again-door' });
    expect(await clientRow(second.clientId)).toMatchObject({ decommissioned_seq: null });
    expect((await getClient(second.clientId)).json()).not.toHaveProperty('decommissioned');
    expect((await tokenRequest(t.app, second, { grant_type: 'client_credentials' })).json().scope).toBe('sync devices:read keys:register');
    // A ticket between the two deletions moves the counter on, so the numbers differ by more than one.
    await device(t, operator, 'again-phone');
    await ticket(t, operator, 'again-door', 'again-phone');

    const again = await removeLock('again-door');
    expect(again.statusCode).toBe(204);
    const secondSeq = await changeCounter(t, acme.tenantId);
    expect(secondSeq).toBeGreaterThan(firstSeq + 1);
    expect(await clientRow(first.clientId)).toMatchObject({ decommissioned_seq: firstSeq });
    expect(await clientRow(second.clientId)).toMatchObject({ decommissioned_seq: secondSeq });
    // The first client is neither revoked nor audited again.
    expect(await revocationKinds(first.clientId)).toEqual(['client-decommissioned']);
    expect((await auditEvents(t, { requestId: String(again.headers['x-request-id']) })).map((event) => event.target)).not.toContain(`client:${first.clientId}`);
    expect((await tokenRequest(t.app, second, { grant_type: 'client_credentials' })).json().scope).toBe('sync');
  });

  it('a client bound while the lock is being deleted is decommissioned with it or refused, never bound to a lock that is gone', async () => {
    for (let round = 0; round < 8; round++) {
      const id = `race-door-${round}`;
      await lock(t, operator, id);
      const [created, removed] = await Promise.allSettled([
        createClient(t.app, acme, ['sync', 'devices:read'], { securedObjectId: id }),
        removeLock(id),
      ]);
      expect(removed.status === 'fulfilled' && removed.value.statusCode).toBe(204);
      if (created.status === 'fulfilled') {
        expect(await clientRow(created.value.clientId)).toMatchObject({ decommissioned_seq: await changeCounter(t, acme.tenantId) });
        expect((await tokenRequest(t.app, created.value, { grant_type: 'client_credentials' })).json().scope).toBe('sync');
      } else {
        expect(created.reason).toMatchObject({ status: 422 });
      }
    }
    const { rows } = await t.database.db.query<{ orphans: number }>(
      `SELECT count(*)::int AS orphans FROM oauth_clients c
        WHERE c.secured_object_id IS NOT NULL AND c.decommissioned_seq IS NULL
          AND NOT EXISTS (SELECT 1 FROM secured_objects o WHERE o.tenant_id = c.tenant_id AND o.id = c.secured_object_id)`,
    );
    expect(rows[0]!.orphans).toBe(0);
  });

  it('deleting tenant A\'s lock leaves tenant B\'s lock with the same id and its client alone', async () => {
    await lock(t, operator, 'twin-door');
    await lock(t, otherOperator, 'twin-door');
    const ours = await createClient(t.app, acme, ['sync', 'devices:read'], { securedObjectId: 'twin-door' });
    const theirs = await createClient(t.app, other, ['sync', 'devices:read'], { securedObjectId: 'twin-door' });
    const theirToken = await clientToken(t.app, theirs);

    expect((await removeLock('twin-door')).statusCode).toBe(204);

    expect(await clientRow(ours.clientId)).toMatchObject({ decommissioned_seq: await changeCounter(t, acme.tenantId) });
    expect(await clientRow(theirs.clientId)).toMatchObject({ tenant_id: other.tenantId, decommissioned_seq: null });
    expect(await revocationKinds(theirs.clientId)).toEqual([]);
    expect((await tokenRequest(t.app, theirs, { grant_type: 'client_credentials' })).json().scope).toBe('sync devices:read keys:register');
    expect(await introspect(t.app, theirs, theirToken)).toMatchObject({ active: true, scope: 'sync devices:read keys:register' });
    expect((await syncRequest(t, theirToken, 'twin-door')).statusCode).toBe(200);
    expect((await getClient(theirs.clientId, otherOperator)).json()).not.toHaveProperty('decommissioned');
  });
});

describe('a failed deletion changes nothing', () => {
  it('404 for a missing or another tenant\'s device or lock: no client deleted, decommissioned or revoked', async () => {
    await device(t, otherOperator, 'only-theirs-phone');
    await lock(t, otherOperator, 'only-theirs-door');
    const theirPhoneClient = await createClient(t.app, other, ['tokens:download'], { mobileDeviceId: 'only-theirs-phone' });
    const theirDoorClient = await createClient(t.app, other, ['sync', 'devices:read'], { securedObjectId: 'only-theirs-door' });
    const before = await clientState();
    await expectNothingChanged(t, async () => {
      for (const id of ['no-such-phone', 'only-theirs-phone']) expectProblem(await removeDevice(id), 404);
      for (const id of ['no-such-door', 'only-theirs-door']) expectProblem(await removeLock(id), 404);
    });
    expect(await clientState()).toEqual(before);
    expect((await tokenRequest(t.app, theirPhoneClient, { grant_type: 'client_credentials' })).statusCode).toBe(200);
    expect((await tokenRequest(t.app, theirDoorClient, { grant_type: 'client_credentials' })).json().scope).toBe('sync devices:read keys:register');
  });
});

describe.runIf(Boolean(postgresTestUrl()))('G42 across two instances on one PostgreSQL database', () => {
  /** Polls `check` every 50 ms until it holds or 6 s passed; answers whether it held and how long that took. */
  async function waitUntil(check: () => Promise<boolean>): Promise<{ held: boolean; elapsed: number }> {
    const start = Date.now();
    let held = await check();
    while (!held && Date.now() - start < 6000) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      held = await check();
    }
    return { held, elapsed: Date.now() - start };
  }

  const statusOf = async (app: App, url: string, token: string) => (await app.inject({ url, headers: { authorization: `Bearer ${token}` } })).statusCode;

  it('a device deleted on one instance: the other refuses its client\'s token and the client itself within 5 s', async () => {
    const peer = await anotherInstance(t);
    try {
      await peer.ready();
      await device(t, operator, 'x-phone');
      const bound = await createClient(t.app, acme, ['tokens:download'], { mobileDeviceId: 'x-phone' });
      const boundToken = await clientToken(t.app, bound);
      // The peer authenticates the client once, so keeps it in its cache.
      expect((await tokenRequest(peer, bound, { grant_type: 'client_credentials' })).statusCode).toBe(200);
      const url = '/deviceapi/mobiledevices/x-phone/tickets';
      expect(await statusOf(peer, url, boundToken)).toBe(200);

      expect((await removeDevice('x-phone')).statusCode).toBe(204);
      // Until the revocation arrives the peer would answer 404 (no such device); then the token itself is refused.
      const refused = await waitUntil(async () => (await statusOf(peer, url, boundToken)) === 401);
      expect(refused.held).toBe(true);
      expect(refused.elapsed).toBeLessThan(5000);
      const endpoint = await waitUntil(async () => (await tokenRequest(peer, bound, { grant_type: 'client_credentials' })).statusCode === 401);
      expect(endpoint.held).toBe(true);
      expect(endpoint.elapsed).toBeLessThan(5000);
    } finally {
      await peer.close();
    }
  });

  it('a lock deleted on one instance: the other refuses the client\'s wider token and narrows its grant within 5 s', async () => {
    const peer = await anotherInstance(t);
    try {
      await peer.ready();
      await lock(t, operator, 'x-door');
      const bound = await createClient(t.app, acme, ['sync', 'devices:read'], { securedObjectId: 'x-door' });
      const wideToken = await clientToken(t.app, bound);
      expect((await tokenRequest(peer, bound, { grant_type: 'client_credentials' })).json().scope).toBe('sync devices:read keys:register');
      const url = '/deviceapi/securedobjects/x-door/sync';
      expect(await statusOf(peer, url, wideToken)).toBe(200);

      expect((await removeLock('x-door')).statusCode).toBe(204);
      const refused = await waitUntil(async () => (await statusOf(peer, url, wideToken)) === 401);
      expect(refused.held).toBe(true);
      expect(refused.elapsed).toBeLessThan(5000);
      const narrowed = await waitUntil(
        async () => (await tokenRequest(peer, bound, { grant_type: 'client_credentials' })).json().scope === 'sync',
      );
      expect(narrowed.held).toBe(true);
      expect(narrowed.elapsed).toBeLessThan(5000);
    } finally {
      await peer.close();
    }
  });
});
