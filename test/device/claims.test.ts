// Claim links (docs/api-reference.md 12, docs/security-cases.md H58): created and managed on the Access and Operator
// APIs, looked up and redeemed by a phone with its own key, its client without a secret, its bound credentials; the
// states and their events, expiry by the sweep, revocation, concurrent redemptions, the per-address limit.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Queryable } from '../../src/db/database.js';
import { findClaimByCode } from '../../src/db/repositories/claim.repo.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { accessTenant, expectAccessAuthChecks, join, lockGroup, permission, resident, userToken, v1, type AccessTenant } from '../helpers/access.js';
import { assertionTokenRequest, claimNonce, enrol, enrolledToken, lookUp, redeemRequest, residentClaim } from '../helpers/claims.js';
import { expectNothingChanged } from '../helpers/database-state.js';
import { download } from '../helpers/device.js';
import { keyProof, newKeyPair } from '../helpers/holder-keys.js';
import { basic, bearer, clientToken, createClient, form } from '../helpers/oauth.js';
import { call, device, expectAuthChecks, expectProblem, lock, nextLink } from '../helpers/operator.js';

const DAY = 86_400_000;

describe('claim links', () => {
  let t: TestApp;
  let now = Date.now();
  let acme: AccessTenant;
  let other: AccessTenant;
  let residentId: string;

  async function eventsOf(tenantId: string, claimId: string): Promise<string[]> {
    const { rows } = await t.database.db.query<{ action: string }>(
      'SELECT action FROM audit_events WHERE tenant_id = $1 AND target = $2 ORDER BY seq',
      [tenantId, `claim:${claimId}`],
    );
    return rows.map((row) => row.action);
  }

  beforeAll(async () => {
    // The per-address limit has its own test below; here one address makes every request.
    t = await buildTestApp({ BCRYPT_COST: '4', CLAIM_RATE_LIMIT_PER_MINUTE: '0' }, { clock: () => now });
    acme = await accessTenant(t, 'claims');
    other = await accessTenant(t, 'claims-other');
    for (const id of ['front', 'back']) await lock(t, acme.operator, id);
    const doors = await lockGroup(t, acme.token, 'doors', ['front', 'back']);
    residentId = (await resident(t, acme.token, 'Ada Lovelace')).id;
    await permission(t, acme.token, residentId, doors.id, { beginDate: now - DAY, endDate: now + 30 * DAY });
  });
  afterAll(async () => {
    await t.close();
  });

  describe('creating, reading, listing and revoking', () => {
    it('creates a claim for a resident: a code of 256 bits shown once, stored only hashed, the link carrying it in its fragment', async () => {
      const response = await v1(t, acme.token, { method: 'POST', url: `/v1/residents/${residentId}/claims`, payload: { note: 'flat 4B' } });
      expect(response.statusCode, response.body).toBe(201);
      expect(response.headers['cache-control']).toBe('no-store');
      const claim = response.json();
      expect(response.headers.location).toBe(`/v1/claims/${claim.id}`);
      expect(claim).toMatchObject({ state: 'created', maxDevices: 1, devices: [], residentId, note: 'flat 4B', expiresAt: now + 604_800_000 });
      expect(claim.code).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(claim.url).toBe(`http://issuer.test/claim#${claim.code}`);
      const { rows } = await t.database.db.query<{ code_hash: Buffer; state: string }>('SELECT code_hash, state FROM claims WHERE tenant_id = $1 AND id = $2', [
        acme.tenant.tenantId,
        claim.id,
      ]);
      expect(Buffer.from(rows[0]!.code_hash).equals(createHash('sha256').update(claim.code).digest())).toBe(true);
      // The code is nowhere in the database in the clear.
      const dump = await t.database.db.query<{ text: string }>("SELECT string_agg(c::text, ' ') AS text FROM claims c");
      expect(dump.rows[0]!.text).not.toContain(claim.code);
      expect(await eventsOf(acme.tenant.tenantId, claim.id)).toEqual(['claim.created']);
      // Reading never shows the code again.
      const read = await v1(t, acme.token, { method: 'GET', url: `/v1/claims/${claim.id}` });
      expect(read.statusCode).toBe(200);
      expect(read.json()).not.toHaveProperty('code');
      expect(read.json()).not.toHaveProperty('url');
      expect(read.json()).toMatchObject({ id: claim.id, state: 'created', creationDate: now });
    });

    it('refuses bad input with a 400 or 422 and changes nothing', async () => {
      const stranger = await device(t, acme.operator, 'stranger');
      await expectNothingChanged(t, async () => {
        for (const payload of [{ expiresIn: 899 }, { expiresIn: 2_592_001 }, { maxDevices: 0 }, { maxDevices: 6 }, { colour: 'red' }, { note: 'x'.repeat(501) }]) {
          expectProblem(await v1(t, acme.token, { method: 'POST', url: `/v1/residents/${residentId}/claims`, payload }), 400);
        }
        const notMember = await v1(t, acme.token, { method: 'POST', url: `/v1/residents/${residentId}/claims`, payload: { replaces: stranger.id } });
        expect(expectProblem(notMember, 422).errors).toEqual([{ field: 'replaces', message: 'not a mobile device of this resident' }]);
      });
      // Another tenant's resident, or none: 404.
      const foreign = (await resident(t, other.token, 'Someone else')).id;
      expectProblem(await v1(t, acme.token, { method: 'POST', url: `/v1/residents/${foreign}/claims`, payload: {} }), 404);
      expectProblem(await v1(t, acme.token, { method: 'POST', url: '/v1/residents/not-a-uuid/claims', payload: {} }), 404);
    });

    it('checks the Access API routes\' tokens and scopes', async () => {
      const claim = await residentClaim(t, acme.token, residentId);
      const wrongScope = await userToken(t, acme, 'devices:read');
      await expectAccessAuthChecks(t, { operator: acme.operator, wrongScope }, [
        { method: 'POST', url: `/v1/residents/${residentId}/claims`, payload: {}, scope: 'device-groups:write' },
        { method: 'GET', url: `/v1/residents/${residentId}/claims`, scope: 'device-groups:read' },
        { method: 'GET', url: `/v1/claims/${claim.id}`, scope: 'device-groups:read' },
        { method: 'DELETE', url: `/v1/claims/${claim.id}`, scope: 'device-groups:write' },
      ]);
    });

    it('checks the Operator API routes\' tokens and scopes', async () => {
      const claim = await residentClaim(t, acme.token, residentId);
      const wrongScope = await clientToken(t.app, await createClient(t.app, acme.tenant, ['audit:read']));
      await expectAuthChecks(t, wrongScope, [
        { method: 'POST', url: '/operatorapi/claims', payload: { residentId }, scope: 'devices:write' },
        { method: 'GET', url: '/operatorapi/claims', scope: 'devices:read' },
        { method: 'GET', url: `/operatorapi/claims/${claim.id}`, scope: 'devices:read' },
        { method: 'DELETE', url: `/operatorapi/claims/${claim.id}`, scope: 'devices:write' },
      ]);
    });

    it('lists a resident\'s claims in pages, and another tenant sees none of them', async () => {
      const listed = await v1(t, acme.token, { method: 'GET', url: `/v1/residents/${residentId}/claims?limit=1` });
      expect(listed.statusCode).toBe(200);
      expect(listed.json()).toHaveLength(1);
      expect(nextLink(listed)).toContain(`/v1/residents/${residentId}/claims?limit=1&cursor=`);
      const second = await v1(t, acme.token, { method: 'GET', url: nextLink(listed)! });
      expect(second.json()[0].id).not.toBe(listed.json()[0].id);
      const claimId = listed.json()[0].id as string;
      expectProblem(await v1(t, other.token, { method: 'GET', url: `/v1/claims/${claimId}` }), 404);
      expectProblem(await v1(t, other.token, { method: 'DELETE', url: `/v1/claims/${claimId}` }), 404);
      expectProblem(await v1(t, other.token, { method: 'GET', url: `/v1/residents/${residentId}/claims` }), 404);
      const otherOperator = await call(t, other.operator, { method: 'GET', url: `/operatorapi/claims/${claimId}` });
      expectProblem(otherOperator, 404);
      const otherList = await call(t, other.operator, { method: 'GET', url: `/operatorapi/claims?residentId=${residentId}` });
      expect(otherList.json()).toEqual([]);
    });

    it('creates claims on the Operator API for a resident or for one device, and filters by either', async () => {
      const phone = await device(t, acme.operator, 'desk-phone');
      const forResident = await call(t, acme.operator, { method: 'POST', url: '/operatorapi/claims', payload: { residentId, maxDevices: 2, expiresIn: 900 } });
      expect(forResident.statusCode, forResident.body).toBe(201);
      expect(forResident.json()).toMatchObject({ residentId, maxDevices: 2, expiresAt: now + 900_000 });
      const forDevice = await call(t, acme.operator, { method: 'POST', url: '/operatorapi/claims', payload: { mobileDeviceId: phone.id } });
      expect(forDevice.statusCode, forDevice.body).toBe(201);
      expect(forDevice.headers.location).toBe(`/operatorapi/claims/${forDevice.json().id}`);
      const byDevice = await call(t, acme.operator, { method: 'GET', url: `/operatorapi/claims?mobileDeviceId=${phone.id}` });
      expect(byDevice.json().map((claim: { id: string }) => claim.id)).toEqual([forDevice.json().id]);
      const byResident = await call(t, acme.operator, { method: 'GET', url: `/operatorapi/claims?residentId=${residentId}` });
      expect(byResident.json().map((claim: { id: string }) => claim.id)).toContain(forResident.json().id);
      await expectNothingChanged(t, async () => {
        for (const payload of [{}, { residentId, mobileDeviceId: phone.id }, { mobileDeviceId: phone.id, maxDevices: 2 }, { mobileDeviceId: 'nobody' }, { residentId: '00000000-0000-4000-8000-000000000000' }]) {
          expectProblem(await call(t, acme.operator, { method: 'POST', url: '/operatorapi/claims', payload }), 422);
        }
        expectProblem(await call(t, acme.operator, { method: 'POST', url: '/operatorapi/claims', payload: { residentId: 'x', extra: 1 } }), 400);
      });
    });

    it('revokes a claim: the link stops working, a second revocation is a 409', async () => {
      const claim = await residentClaim(t, acme.token, residentId);
      const revoked = await v1(t, acme.token, { method: 'DELETE', url: `/v1/claims/${claim.id}` });
      expect(revoked.statusCode).toBe(204);
      expect((await v1(t, acme.token, { method: 'GET', url: `/v1/claims/${claim.id}` })).json()).toMatchObject({ state: 'revoked', endedDate: now });
      expect(expectProblem(await lookUp(t, claim.code), 410)).toMatchObject({ state: 'revoked', type: expect.stringContaining('claim-revoked') });
      const key = newKeyPair();
      expect(expectProblem(await redeemRequest(t, claim.code, { publicKey: key.publicKey, proof: keyProof(t, key, 'any') }), 410)).toMatchObject({ state: 'revoked' });
      expectProblem(await call(t, acme.operator, { method: 'DELETE', url: `/operatorapi/claims/${claim.id}` }), 409);
      expect(await eventsOf(acme.tenant.tenantId, claim.id)).toEqual(['claim.created', 'claim.revoked']);
    });
  });

  describe('a phone redeeming a claim', () => {
    it('looks it up (opened, once), redeems it, authenticates without a secret and downloads credentials bound to its key', async () => {
      const claim = await residentClaim(t, acme.token, residentId);
      const looked = await lookUp(t, claim.code);
      expect(looked.statusCode, looked.body).toBe(200);
      expect(looked.headers['cache-control']).toBe('no-store');
      expect(looked.json()).toEqual({ tenant: acme.tenant.name, residentName: 'Ada Lovelace', expiresAt: claim.expiresAt, nonce: expect.any(String) });
      await lookUp(t, claim.code);
      expect((await v1(t, acme.token, { method: 'GET', url: `/v1/claims/${claim.id}` })).json()).toMatchObject({ state: 'opened', openedDate: now });

      const key = newKeyPair();
      const nonce = await claimNonce(t, claim.code);
      const redeemed = await redeemRequest(t, claim.code, { publicKey: key.publicKey, proof: keyProof(t, key, nonce), name: 'Pixel 9' });
      expect(redeemed.statusCode, redeemed.body).toBe(201);
      expect(redeemed.headers['cache-control']).toBe('no-store');
      const body = redeemed.json();
      expect(body).toEqual({ mobileDeviceId: expect.any(String), clientId: expect.any(String), tokenEndpoint: 'http://issuer.test/oauth/token', issuer: 'http://issuer.test' });

      // The device is the resident's, with the key; the client is bound to it, has no secret, downloads and registers keys.
      const deviceRow = await t.database.db.query<{ name: string; key_thumbprint: string }>('SELECT name, key_thumbprint FROM mobile_devices WHERE tenant_id = $1 AND id = $2', [
        acme.tenant.tenantId,
        body.mobileDeviceId,
      ]);
      expect(deviceRow.rows).toEqual([{ name: 'Pixel 9', key_thumbprint: key.thumbprint }]);
      const residentRead = await v1(t, acme.token, { method: 'GET', url: `/v1/residents/${residentId}` });
      expect(residentRead.json().mobileDeviceIds).toContain(body.mobileDeviceId);
      const clientRow = await t.database.db.query<{ secret_hash: Buffer | null; scopes: string[]; mobile_device_id: string }>(
        'SELECT secret_hash, scopes, mobile_device_id FROM oauth_clients WHERE tenant_id = $1 AND client_id = $2',
        [acme.tenant.tenantId, body.clientId],
      );
      expect(clientRow.rows).toEqual([{ secret_hash: null, scopes: ['tokens:download', 'keys:register'], mobile_device_id: body.mobileDeviceId }]);
      expect((await v1(t, acme.token, { method: 'GET', url: `/v1/claims/${claim.id}` })).json()).toMatchObject({ state: 'claimed', devices: [body.mobileDeviceId], endedDate: now });
      expect(await eventsOf(acme.tenant.tenantId, claim.id)).toEqual(['claim.created', 'claim.opened', 'claim.claimed']);

      // The resident's tickets, bound to the phone's key on its first download.
      const tickets = await download(t, await enrolledToken(t, { key, clientId: body.clientId }), body.mobileDeviceId);
      expect(tickets.map((ticket) => ticket.securedObjectId).sort()).toEqual(['back', 'front']);
      for (const ticket of tickets) {
        expect(JSON.parse(Buffer.from(ticket.credential.split('.')[1]!, 'base64url').toString())).toMatchObject({ cnf: { jkt: key.thumbprint } });
      }

      // Used up: a look-up or a redemption names it.
      expect(expectProblem(await lookUp(t, claim.code), 410)).toMatchObject({ state: 'claimed' });
      // The code never reaches a log line.
      expect(t.logLines.join('\n')).not.toContain(claim.code);
      expect(t.logLines.join('\n')).toContain('/deviceapi/claims/[Redacted]');
    });

    it('a client without a secret cannot use client_secret_basic or client_secret_post', async () => {
      const claim = await residentClaim(t, acme.token, residentId);
      const phone = await enrol(t, claim.code);
      for (const secret of ['', 'x', 'null']) {
        const byBasic = await t.app.inject({
          method: 'POST',
          url: '/oauth/token',
          headers: { authorization: basic(phone.clientId, secret || 'empty'), 'content-type': 'application/x-www-form-urlencoded' },
          payload: form({ grant_type: 'client_credentials' }),
        });
        expect(byBasic.statusCode, byBasic.body).toBe(401);
        expect(byBasic.json()).toMatchObject({ error: 'invalid_client' });
        const byPost = await t.app.inject({
          method: 'POST',
          url: '/oauth/token',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: form({ grant_type: 'client_credentials', client_id: phone.clientId, client_secret: secret || 'empty' }),
        });
        expect(byPost.statusCode, byPost.body).toBe(401);
        expect(byPost.json()).toMatchObject({ error: 'invalid_client' });
      }
      expect((await assertionTokenRequest(t, phone)).statusCode).toBe(200);
      // Nor can an operator give it one.
      const rotation = await call(t, acme.operator, { method: 'POST', url: `/operatorapi/oauthclients/${phone.clientId}/secret` });
      expect(expectProblem(rotation, 409).detail).toContain('private_key_jwt');
      const { rows } = await t.database.db.query('SELECT 1 FROM oauth_clients WHERE tenant_id = $1 AND client_id = $2 AND secret_hash IS NULL', [
        acme.tenant.tenantId,
        phone.clientId,
      ]);
      expect(rows).toHaveLength(1);
    });

    it('answers 404 for an unknown code and 400 or 422 for a bad proof or key, spending the nonce', async () => {
      await expectNothingChanged(t, async () => {
        expectProblem(await lookUp(t, 'A'.repeat(43)), 404);
        const key = newKeyPair();
        expectProblem(await redeemRequest(t, 'A'.repeat(43), { publicKey: key.publicKey, proof: keyProof(t, key, 'n') }), 404);
      });
      const claim = await residentClaim(t, acme.token, residentId);
      const key = newKeyPair();
      const nonce = await claimNonce(t, claim.code);
      // Signed by another key: 400, and the nonce is spent.
      const wrong = await redeemRequest(t, claim.code, { publicKey: key.publicKey, proof: keyProof(t, key, nonce, { signer: newKeyPair().privateKey }) });
      expect(expectProblem(wrong, 400).errors).toEqual([{ field: 'proof', message: expect.stringContaining('signature') }]);
      const again = await redeemRequest(t, claim.code, { publicKey: key.publicKey, proof: keyProof(t, key, nonce) });
      expect(expectProblem(again, 400).detail).toContain('nonce');
      // Another aud: 400.
      const otherAud = await redeemRequest(t, claim.code, { publicKey: key.publicKey, proof: keyProof(t, key, await claimNonce(t, claim.code), { payload: { aud: 'https://elsewhere' } }) });
      expectProblem(otherAud, 400);
      // A private member: 422.
      const privateJwk = { ...key.publicKey, d: 'AAAA' };
      expectProblem(await redeemRequest(t, claim.code, { publicKey: privateJwk, proof: keyProof(t, key, await claimNonce(t, claim.code)) }), 422);
      // Schema: unknown field, missing proof.
      expectProblem(await redeemRequest(t, claim.code, { publicKey: key.publicKey }), 400);
      expectProblem(await redeemRequest(t, claim.code, { publicKey: key.publicKey, proof: 'x', colour: 'red' }), 400);
      // Still usable after all of it.
      expect((await v1(t, acme.token, { method: 'GET', url: `/v1/claims/${claim.id}` })).json()).toMatchObject({ state: 'opened', devices: [] });
      // A key another device holds: 409.
      const first = await enrol(t, (await residentClaim(t, acme.token, residentId)).code);
      const taken = await redeemRequest(t, claim.code, { publicKey: first.key.publicKey, proof: keyProof(t, first.key, await claimNonce(t, claim.code)) });
      expectProblem(taken, 409);
    });

    it('N parallel redemptions of a one-device claim: exactly one wins, the others are 410 claimed', async () => {
      const claim = await residentClaim(t, acme.token, residentId);
      const attempts = await Promise.all(
        Array.from({ length: 6 }, async () => {
          const key = newKeyPair();
          return { key, nonce: await claimNonce(t, claim.code) };
        }),
      );
      const answers = await Promise.all(attempts.map(({ key, nonce }) => redeemRequest(t, claim.code, { publicKey: key.publicKey, proof: keyProof(t, key, nonce) })));
      expect(answers.map((answer) => answer.statusCode).sort()).toEqual([201, 410, 410, 410, 410, 410]);
      for (const answer of answers.filter((candidate) => candidate.statusCode === 410)) expect(answer.json()).toMatchObject({ state: 'claimed' });
      const { rows } = await t.database.db.query<{ device_ids: string[] }>('SELECT device_ids FROM claims WHERE tenant_id = $1 AND id = $2', [acme.tenant.tenantId, claim.id]);
      expect(rows[0]!.device_ids).toHaveLength(1);
      const clients = await t.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM oauth_clients WHERE tenant_id = $1 AND mobile_device_id = ANY ($2::text[])', [
        acme.tenant.tenantId,
        rows[0]!.device_ids,
      ]);
      expect(clients.rows[0]!.n).toBe(1);
    });

    it('a claim for several phones enrols each as a device of the resident until maxDevices', async () => {
      const claim = await residentClaim(t, acme.token, residentId, { maxDevices: 2 });
      const first = await enrol(t, claim.code);
      expect((await v1(t, acme.token, { method: 'GET', url: `/v1/claims/${claim.id}` })).json()).toMatchObject({ state: 'opened', devices: [first.mobileDeviceId] });
      const second = await enrol(t, claim.code);
      expect((await v1(t, acme.token, { method: 'GET', url: `/v1/claims/${claim.id}` })).json()).toMatchObject({
        state: 'claimed',
        devices: [first.mobileDeviceId, second.mobileDeviceId],
      });
    });

    it('a claim for one device gives that device the key and a bound client, and keeps its tickets', async () => {
      const phone = await device(t, acme.operator, 'kiosk');
      await join(t, acme.token, 'residents', residentId, phone.id);
      const created = await call(t, acme.operator, { method: 'POST', url: '/operatorapi/claims', payload: { mobileDeviceId: phone.id } });
      const lookup = await lookUp(t, created.json().code);
      expect(lookup.json()).not.toHaveProperty('residentName');
      const enrolled = await enrol(t, created.json().code);
      expect(enrolled.mobileDeviceId).toBe('kiosk');
      const tickets = await download(t, await enrolledToken(t, enrolled), 'kiosk');
      expect(tickets.map((ticket) => ticket.securedObjectId).sort()).toEqual(['back', 'front']);
      expect(JSON.parse(Buffer.from(tickets[0]!.credential.split('.')[1]!, 'base64url').toString()).cnf).toEqual({ jkt: enrolled.key.thumbprint });
    });
  });

  it('finds a code by its hash in the same two reads whether it exists or not', async () => {
    const claim = await residentClaim(t, acme.token, residentId);
    const statements: string[] = [];
    const counting: Queryable = {
      query: (text: string, params?: unknown[]) => {
        statements.push(text);
        return t.database.db.query(text, params);
      },
    } as Queryable;
    const known = await findClaimByCode(counting, createHash('sha256').update(claim.code).digest());
    const knownStatements = statements.splice(0);
    const unknown = await findClaimByCode(counting, createHash('sha256').update('A'.repeat(43)).digest());
    expect(known?.claim.id).toBe(claim.id);
    expect(unknown).toBeNull();
    expect(statements).toEqual(knownStatements);
    expect(statements).toHaveLength(2);
  });

  it('a replaced device that left the resident meanwhile is left alone', async () => {
    const phone = await device(t, acme.operator, 'kept-phone');
    await join(t, acme.token, 'residents', residentId, phone.id);
    const claim = await residentClaim(t, acme.token, residentId, { replaces: phone.id });
    await v1(t, acme.token, { method: 'DELETE', url: `/v1/residents/${residentId}/mobiledevices/${phone.id}` });
    await enrol(t, claim.code);
    expect((await call(t, acme.operator, { method: 'GET', url: '/operatorapi/mobiledevices/kept-phone' })).statusCode).toBe(200);
  });

  describe('expiry', () => {
    it('a claim past its time answers 410 expired, and the sweep marks it with its event once', async () => {
      const claim = await residentClaim(t, acme.token, residentId, { expiresIn: 900 });
      await claimNonce(t, claim.code);
      now += 900_000;
      expect(expectProblem(await lookUp(t, claim.code), 410)).toMatchObject({ state: 'expired' });
      const late = newKeyPair();
      expect(expectProblem(await redeemRequest(t, claim.code, { publicKey: late.publicKey, proof: keyProof(t, late, 'n') }), 410)).toMatchObject({
        state: 'expired',
        type: expect.stringContaining('claim-expired'),
      });
      expect((await v1(t, acme.token, { method: 'GET', url: `/v1/claims/${claim.id}` })).json()).toMatchObject({ state: 'expired', endedDate: claim.expiresAt });
      expect(await eventsOf(acme.tenant.tenantId, claim.id)).toEqual(['claim.created', 'claim.opened']);
      expect(await t.app.services.claims.expire()).toBeGreaterThanOrEqual(1);
      expect(await eventsOf(acme.tenant.tenantId, claim.id)).toEqual(['claim.created', 'claim.opened', 'claim.expired']);
      const { rows } = await t.database.db.query<{ state: string }>('SELECT state FROM claims WHERE tenant_id = $1 AND id = $2', [acme.tenant.tenantId, claim.id]);
      expect(rows[0]!.state).toBe('expired');
      await t.app.services.claims.expire();
      expect(await eventsOf(acme.tenant.tenantId, claim.id)).toEqual(['claim.created', 'claim.opened', 'claim.expired']);
      expectProblem(await call(t, acme.operator, { method: 'DELETE', url: `/operatorapi/claims/${claim.id}` }), 409);
    });
  });

  describe('the page a browser lands on', () => {
    it('tells the person to open the link on the phone, with no script and nothing from elsewhere', async () => {
      const response = await t.app.inject({ url: '/claim' });
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(response.headers['content-security-policy']).toContain("default-src 'none'");
      expect(response.headers['referrer-policy']).toBe('no-referrer');
      expect(response.body).toContain('<html lang="en">');
      expect(response.body).toContain('<h1>Open this link on your phone</h1>');
      expect(response.body).not.toMatch(/<script|<img|<link|<iframe|<form|https?:\/\//i);
    });
  });
});

describe('the per-address limit on claim look-ups and redemptions', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4', CLAIM_RATE_LIMIT_PER_MINUTE: '3' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('counts unknown codes and redemptions alike, then answers 429 with Retry-After; another address has its own budget', async () => {
    const answers = [];
    for (let attempt = 0; attempt < 3; attempt++) answers.push((await lookUp(t, `guess-${attempt}`)).statusCode);
    expect(answers).toEqual([404, 404, 404]);
    const over = await redeemRequest(t, 'guess-4', {});
    expectProblem(over, 429);
    expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
    expect(over.headers['ratelimit-limit']).toBe('3');
    const elsewhere = await t.app.inject({ url: '/deviceapi/claims/guess-5', remoteAddress: '203.0.113.9' });
    expect(elsewhere.statusCode).toBe(404);
  });

  it('leaves the rest of the Device API alone', async () => {
    const response = await t.app.inject({ url: '/deviceapi/mobiledevices/x/tickets', headers: bearer('nonsense') });
    expect(response.statusCode).toBe(401);
  });
});
