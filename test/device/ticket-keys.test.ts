// Ticket-key lifecycle per tenant (docs/api-reference.md 8.1): each tenant's key set at /tenants/{tenant}/jwks.json and none at
// /.well-known/jwks.json (docs/security-cases.md G39), announced rotation, emergency rotation, the key set's change number, the
// Operator API routes (scopes, tenant isolation, audit) and `keys rotate --tenant`.
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CliError, runCli, type CliContext } from '../../src/cli.js';
import type { Database } from '../../src/db/database.js';
import { signCompactJws } from '../../src/shared/jws.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { bearer, clientToken, createClient, createTenant, keyRotationToken, type TenantFixture } from '../helpers/oauth.js';
import { auditEvents, expectAuthChecks, expectProblem } from '../helpers/operator.js';

describe('ticket keys', () => {
  let now = Date.UTC(2026, 4, 4, 9, 0, 0, 0);
  let t: TestApp;
  let lifetime: number;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' }, { clock: () => now });
    lifetime = t.config.CREDENTIAL_MAX_LIFETIME * 1000;
  });
  afterAll(async () => {
    await t.close();
  });

  const keys = () => t.app.services.ticketKeys;

  /** A management token of the tenant, made at the current (moved) time. */
  const operator = (tenant: TenantFixture) => clientToken(t.app, tenant);

  async function tenantJwks(name: string): Promise<JSONWebKeySet> {
    const response = await t.app.inject({ url: `/tenants/${name}/jwks.json` });
    expect(response.statusCode, response.body).toBe(200);
    return response.json();
  }

  const kidsOf = (set: JSONWebKeySet) => set.keys.map((key) => key.kid).sort();

  async function rotation(tenant: TenantFixture, payload: object = {}) {
    return t.app.inject({ method: 'POST', url: '/operatorapi/ticket-keys/rotations', headers: bearer(await keyRotationToken(t.app, tenant)), payload });
  }

  async function listKeys(tenant: TenantFixture) {
    const response = await t.app.inject({ url: '/operatorapi/ticket-keys', headers: bearer(await operator(tenant)) });
    expect(response.statusCode, response.body).toBe(200);
    return response.json() as { kid: string; state: string; activatesTime: number; retiresTime?: number; publishedUntil?: number }[];
  }

  /** The tenant's change counter and the change number its key set last changed at. */
  async function changeNumbers(tenant: TenantFixture): Promise<{ last: number | null; keySet: number | null }> {
    const db: Database = t.database.db;
    const counter = await db.query<{ last_seq: number }>('SELECT last_seq FROM tenant_change_counters WHERE tenant_id = $1', [tenant.tenantId]);
    const keySet = await db.query<{ change_seq: number }>('SELECT change_seq FROM ticket_key_set_changes WHERE tenant_id = $1', [tenant.tenantId]);
    return {
      last: counter.rows[0] ? Number(counter.rows[0].last_seq) : null,
      keySet: keySet.rows[0] ? Number(keySet.rows[0].change_seq) : null,
    };
  }

  async function keyRow(kid: string) {
    const { rows } = await t.database.db.query<{ activates_at: number; retired_at: number | null; withdrawn_at: number | null }>(
      'SELECT activates_at, retired_at, withdrawn_at FROM signing_keys WHERE kid = $1',
      [kid],
    );
    const row = rows[0]!;
    const number = (value: number | null) => (value === null ? null : Number(value));
    return { activatesAt: Number(row.activates_at), retiredAt: number(row.retired_at), withdrawnAt: number(row.withdrawn_at) };
  }

  const signingKid = async (tenant: TenantFixture) => (await keys().signingKey(tenant.tenantId)).kid;

  describe('publication', () => {
    let acme: TenantFixture;
    let other: TenantFixture;
    let acmeKid: string;
    let otherKid: string;

    beforeAll(async () => {
      acme = await createTenant(t.app, 'acme');
      other = await createTenant(t.app, 'other');
      acmeKid = await signingKid(acme);
      otherKid = await signingKid(other);
    });

    it("publishes a tenant's ticket keys, and only them, at /tenants/{tenant}/jwks.json, cacheable and without authentication", async () => {
      const response = await t.app.inject({ url: '/tenants/acme/jwks.json' });
      expect(response.statusCode, response.body).toBe(200);
      expect(response.headers['cache-control']).toBe('public, max-age=300');
      const set = response.json() as JSONWebKeySet;
      expect(kidsOf(set)).toEqual([acmeKid]);
      expect(set.keys[0]).toMatchObject({ kid: acmeKid, alg: t.config.JWT_ALG, use: 'sig' });
      expect(set.keys[0]).not.toHaveProperty('d');
      expect(kidsOf(await tenantJwks('other'))).toEqual([otherKid]);
      // Percent-encoded, the same tenant.
      expect(kidsOf(await tenantJwks('ac%6De'))).toEqual([acmeKid]);
    });

    it('answers 404 for an unknown tenant and 400 for a name no tenant can have, as problems', async () => {
      const unknown = await t.app.inject({ url: '/tenants/nobody/jwks.json' });
      expect(expectProblem(unknown, 404).detail).toContain('nobody');
      expectProblem(await t.app.inject({ url: '/tenants/a%40b/jwks.json' }), 400);
      expectProblem(await t.app.inject({ url: '/tenants/%2Facme/jwks.json' }), 400);
    });

    it('keeps every ticket key out of /.well-known/jwks.json (docs/security-cases.md G39): access-token keys only', async () => {
      const response = await t.app.inject({ url: '/.well-known/jwks.json' });
      expect(response.statusCode).toBe(200);
      const published = kidsOf(response.json());
      const { rows } = await t.database.db.query<{ kid: string; purpose: string }>('SELECT kid, purpose FROM signing_keys');
      const ticketKids = rows.filter((row) => row.purpose === 'ticket').map((row) => row.kid);
      expect(ticketKids).toEqual(expect.arrayContaining([acmeKid, otherKid]));
      for (const kid of ticketKids) expect(published).not.toContain(kid);
      expect(published).toEqual([(await t.app.services.accessTokenKeys.signingKey()).kid]);
    });

    it("records the generation of a tenant's first ticket key as a change of its key set", async () => {
      const fresh = await createTenant(t.app, 'first-key');
      expect((await changeNumbers(fresh)).keySet).toBeNull();
      await signingKid(fresh);
      const numbers = await changeNumbers(fresh);
      expect(numbers.keySet).not.toBeNull();
      expect(numbers.keySet).toBe(numbers.last);
      // Signing again generates nothing and takes no change number.
      await keys().ensureKey(fresh.tenantId);
      expect(await changeNumbers(fresh)).toEqual(numbers);
    });
  });

  describe('normal rotation (announced)', () => {
    let tenant: TenantFixture;
    let first: string;
    let announced: string;
    let rotatedAt: number;

    beforeAll(async () => {
      tenant = await createTenant(t.app, 'announcing');
      first = await signingKid(tenant);
    });

    it('publishes the new key at once, keeps signing with the current one, and takes a change number', async () => {
      const before = await changeNumbers(tenant);
      rotatedAt = now;
      const response = await rotation(tenant);
      expect(response.statusCode, response.body).toBe(201);
      const body = response.json();
      announced = body.kid;
      expect(body).toEqual({ kid: expect.any(String), activatesTime: rotatedAt + lifetime, emergency: false, retired: [first] });
      expect(response.headers.location).toBe(`/operatorapi/ticket-keys/${announced}`);

      expect(kidsOf(await tenantJwks('announcing'))).toEqual([announced, first].sort());
      expect(await signingKid(tenant)).toBe(first);
      expect(await keyRow(first)).toEqual({ activatesAt: expect.any(Number), retiredAt: rotatedAt + lifetime, withdrawnAt: null });

      const after = await changeNumbers(tenant);
      expect(after.last).toBe(before.last! + 1);
      expect(after.keySet).toBe(after.last);

      expect(await listKeys(tenant)).toEqual([
        { kid: announced, alg: t.config.JWT_ALG, state: 'announced', createdTime: rotatedAt, activatesTime: rotatedAt + lifetime },
        {
          kid: first,
          alg: t.config.JWT_ALG,
          state: 'active',
          createdTime: expect.any(Number),
          activatesTime: expect.any(Number),
          retiresTime: rotatedAt + lifetime,
          publishedUntil: rotatedAt + 2 * lifetime,
        },
      ]);
      const one = await t.app.inject({ url: `/operatorapi/ticket-keys/${announced}`, headers: bearer(await operator(tenant)) });
      expect(one.statusCode, one.body).toBe(200);
      expect(one.json()).toMatchObject({ kid: announced, state: 'announced' });
    });

    it('refuses a second normal rotation while the announced key is pending (409), changing nothing', async () => {
      const before = await changeNumbers(tenant);
      const { rows: keysBefore } = await t.database.db.query('SELECT kid FROM signing_keys WHERE tenant_id = $1', [tenant.tenantId]);
      const refused = await rotation(tenant, { emergency: false });
      const problem = expectProblem(refused, 409);
      expect(problem.detail).toContain(new Date(rotatedAt + lifetime).toISOString());
      expect(problem.detail).toContain('emergency');
      expect(await changeNumbers(tenant)).toEqual(before);
      const { rows: keysAfter } = await t.database.db.query('SELECT kid FROM signing_keys WHERE tenant_id = $1', [tenant.tenantId]);
      expect(keysAfter).toHaveLength(keysBefore.length);
    });

    it('signs with the new key from one lifetime after the rotation; the old one is retired but still published', async () => {
      now = rotatedAt + lifetime - 1;
      expect(await signingKid(tenant)).toBe(first);
      now = rotatedAt + lifetime;
      expect(await signingKid(tenant)).toBe(announced);
      expect(kidsOf(await tenantJwks('announcing'))).toEqual([announced, first].sort());
      expect(await keys().verificationKey(first)).not.toBeNull();
      const states = Object.fromEntries((await listKeys(tenant)).map((key) => [key.kid, key.state]));
      expect(states).toEqual({ [announced]: 'active', [first]: 'retired' });
    });

    it('drops the old key one lifetime after its last signature, without a change number', async () => {
      const before = await changeNumbers(tenant);
      now = rotatedAt + 2 * lifetime - 1;
      expect(kidsOf(await tenantJwks('announcing'))).toEqual([announced, first].sort());
      now = rotatedAt + 2 * lifetime;
      expect(kidsOf(await tenantJwks('announcing'))).toEqual([announced]);
      expect(await keys().verificationKey(first)).toBeNull();
      expect((await listKeys(tenant)).map((key) => key.kid)).toEqual([announced]);
      expect(await changeNumbers(tenant)).toEqual(before);
      // Nothing pending any more: a normal rotation is accepted again.
      expect((await rotation(tenant)).statusCode).toBe(201);
    });
  });

  describe('emergency rotation', () => {
    let tenant: TenantFixture;

    beforeAll(async () => {
      tenant = await createTenant(t.app, 'leaky');
    });

    it('signs with the new key at once and withdraws every other key from the key set and from verification at once', async () => {
      const leaked = await keys().signingKey(tenant.tenantId);
      const announcedKid = (await rotation(tenant)).json().kid as string;
      const credential = await signCompactJws(leaked, 'ticket+jwt', { iss: 'x', aud: 'door', exp: Math.floor(now / 1000) + 3600 });
      await jwtVerify(credential, createLocalJWKSet(await tenantJwks('leaky')), { currentDate: new Date(now) });
      const before = await changeNumbers(tenant);

      const response = await rotation(tenant, { emergency: true });
      expect(response.statusCode, response.body).toBe(201);
      const body = response.json();
      expect(body).toEqual({ kid: expect.any(String), activatesTime: now, emergency: true, retired: [leaked.kid, announcedKid].sort() });

      expect(await signingKid(tenant)).toBe(body.kid);
      const set = await tenantJwks('leaky');
      expect(kidsOf(set)).toEqual([body.kid]);
      await expect(jwtVerify(credential, createLocalJWKSet(set), { currentDate: new Date(now) })).rejects.toThrow();
      expect(await keys().verificationKey(leaked.kid)).toBeNull();
      expect(await keys().verificationKey(announcedKid)).toBeNull();
      for (const kid of [leaked.kid, announcedKid]) expect(await keyRow(kid)).toMatchObject({ retiredAt: now, withdrawnAt: now });
      expect((await listKeys(tenant)).map((key) => [key.kid, key.state])).toEqual([[body.kid, 'active']]);
      const gone = await t.app.inject({ url: `/operatorapi/ticket-keys/${leaked.kid}`, headers: bearer(await operator(tenant)) });
      expectProblem(gone, 404);

      const after = await changeNumbers(tenant);
      expect(after.last).toBe(before.last! + 1);
      expect(after.keySet).toBe(after.last);
    });
  });

  describe('Operator API', () => {
    let acme: TenantFixture;
    let other: TenantFixture;

    beforeAll(async () => {
      acme = await createTenant(t.app, 'routes-acme');
      other = await createTenant(t.app, 'routes-other');
      await keys().ensureKey(acme.tenantId);
      await keys().ensureKey(other.tenantId);
    });

    it('answers 401 without a token and 403 without the scope', async () => {
      const writeOnly = await clientToken(t.app, await createClient(t.app, acme, ['devices:write']));
      const kid = await signingKid(acme);
      await expectAuthChecks(t, writeOnly, [
        { method: 'GET', url: '/operatorapi/ticket-keys', scope: 'devices:read' },
        { method: 'GET', url: `/operatorapi/ticket-keys/${kid}`, scope: 'devices:read' },
      ]);
      // docs/security-cases.md H50: rotating needs `keys:rotate`; neither `devices:write` nor the management client has it.
      await expectAuthChecks(t, writeOnly, [{ method: 'POST', url: '/operatorapi/ticket-keys/rotations', payload: {}, scope: 'keys:rotate' }]);
      await expectAuthChecks(t, await operator(acme), [{ method: 'POST', url: '/operatorapi/ticket-keys/rotations', payload: { emergency: true }, scope: 'keys:rotate' }]);
      expect(await signingKid(acme)).toBe(kid);
    });

    it('refuses an invalid body with 400', async () => {
      const token = await keyRotationToken(t.app, acme);
      for (const payload of [{ emergency: 'yes' }, { emergency: true, force: true }]) {
        const response = await t.app.inject({ method: 'POST', url: '/operatorapi/ticket-keys/rotations', headers: bearer(token), payload });
        expectProblem(response, 400);
      }
    });

    it("never shows or rotates another tenant's keys", async () => {
      const acmeKid = await signingKid(acme);
      const otherKid = await signingKid(other);
      expect((await listKeys(other)).map((key) => key.kid)).toEqual([otherKid]);
      const foreign = await t.app.inject({ url: `/operatorapi/ticket-keys/${acmeKid}`, headers: bearer(await operator(other)) });
      expect(expectProblem(foreign, 404).detail).not.toContain(acme.tenantId);

      const before = await changeNumbers(acme);
      const response = await rotation(other, { emergency: true });
      expect(response.statusCode, response.body).toBe(201);
      expect(response.json().retired).toEqual([otherKid]);
      expect(await signingKid(acme)).toBe(acmeKid);
      expect(kidsOf(await tenantJwks('routes-acme'))).toEqual([acmeKid]);
      expect(kidsOf(await tenantJwks('routes-other'))).not.toContain(acmeKid);
      expect(await changeNumbers(acme)).toEqual(before);
    });

    it('audits each rotation as key.rotated on ticket_key:<kid>, with the caller and the request id', async () => {
      const management = await operator(acme);
      const rotatorClient = await createClient(t.app, acme, ['keys:rotate']);
      const rotator = await clientToken(t.app, rotatorClient);
      const response = await t.app.inject({ method: 'POST', url: '/operatorapi/ticket-keys/rotations', headers: bearer(rotator), payload: {} });
      expect(response.statusCode, response.body).toBe(201);
      const kid = response.json().kid as string;
      expect(await auditEvents(t, { target: `ticket_key:${kid}` })).toEqual([
        {
          tenant_id: acme.tenantId,
          time: now,
          actor: `client:${rotatorClient.clientId}`,
          action: 'key.rotated',
          target: `ticket_key:${kid}`,
          request_id: response.headers['x-request-id'],
        },
      ]);
      const listed = await t.app.inject({ url: `/operatorapi/audit-events?target=ticket_key:${kid}`, headers: bearer(management) });
      expect(listed.json()).toEqual([expect.objectContaining({ action: 'key.rotated', target: `ticket_key:${kid}` })]);
    });
  });

  // docs/security-cases.md H50: the emergency rotation strands every never-online lock until an installer visits, so it
  // has its own scope (in no default set), is audited with an event saying it was an emergency, and is refused more often
  // than TICKET_KEY_EMERGENCY_ROTATION_MIN_INTERVAL per tenant.
  describe('emergency rotation budget', () => {
    let acme: TenantFixture;
    let other: TenantFixture;

    beforeAll(async () => {
      acme = await createTenant(t.app, 'budget-acme');
      other = await createTenant(t.app, 'budget-other');
      await keys().ensureKey(acme.tenantId);
      await keys().ensureKey(other.tenantId);
    });

    it('is in no default scope set: the management client cannot rotate', async () => {
      const response = await t.app.inject({
        method: 'POST',
        url: '/operatorapi/ticket-keys/rotations',
        headers: bearer(await operator(acme)),
        payload: { emergency: true },
      });
      expectProblem(response, 403);
      expect(response.headers['www-authenticate']).toContain('scope="keys:rotate"');
    });

    it('refuses a second emergency rotation within the interval with 429 and Retry-After, changing nothing; allows it after', async () => {
      const interval = t.config.TICKET_KEY_EMERGENCY_ROTATION_MIN_INTERVAL * 1000;
      expect(interval).toBe(3600_000);
      const first = await rotation(acme, { emergency: true });
      expect(first.statusCode, first.body).toBe(201);
      const firstKid = first.json().kid as string;
      const events = await t.database.db.query<{ data: { kid: string; emergency: boolean } }>(
        `SELECT data FROM audit_events WHERE tenant_id = $1 AND action = 'key.rotated' AND target = $2`,
        [acme.tenantId, `ticket_key:${firstKid}`],
      );
      expect(events.rows.map((row) => row.data)).toEqual([expect.objectContaining({ kid: firstKid, emergency: true })]);
      const feed = await t.app.inject({ url: '/operatorapi/events?types=key.rotated', headers: bearer(await operator(acme)) });
      expect(feed.json()).toEqual([expect.objectContaining({ type: 'key.rotated', data: expect.objectContaining({ kid: firstKid, emergency: true }) })]);

      now += interval - 60_000;
      const before = await changeNumbers(acme);
      const refused = await rotation(acme, { emergency: true });
      const problem = expectProblem(refused, 429);
      expect(refused.headers['retry-after']).toBe('60');
      expect(problem.detail).toMatch(/emergency rotation/);
      expect(problem.detail).toContain(new Date(now + 60_000).toISOString());
      expect(await signingKid(acme)).toBe(firstKid);
      expect(await changeNumbers(acme)).toEqual(before);
      // Another tenant's budget is its own; a normal rotation is not an emergency one.
      expect((await rotation(other, { emergency: true })).statusCode).toBe(201);

      now += 60_000;
      const later = await rotation(acme, { emergency: true });
      expect(later.statusCode, later.body).toBe(201);
      expect(later.json().retired).toEqual([firstKid]);
    });
  });

  describe('command line', () => {
    let tenant: TenantFixture;

    beforeAll(async () => {
      tenant = await createTenant(t.app, 'cli-keys');
      await keys().ensureKey(tenant.tenantId);
    });

    /** Runs the CLI in this process on the test app's services; answers what it printed. */
    async function cli(args: string[]): Promise<string> {
      const printed: string[] = [];
      const context: CliContext = {
        config: t.config,
        log: t.app.log as never,
        database: async () => t.database.db,
        services: async () => t.app.services,
        readStdin: async () => '',
        out: (text) => printed.push(text),
      };
      await runCli(args, context);
      return printed.join('\n');
    }

    it('keys rotate --tenant NAME announces a ticket key, refuses a second one, and --emergency replaces at once', async () => {
      const current = await signingKid(tenant);
      const announced = JSON.parse(await cli(['keys', 'rotate', '--tenant', 'cli-keys', '--json']));
      expect(announced).toEqual({ tenant: 'cli-keys', kid: expect.any(String), activatesTime: now + lifetime, emergency: false, retired: [current] });
      expect(await signingKid(tenant)).toBe(current);
      expect(await auditEvents(t, { target: `ticket_key:${announced.kid}` })).toEqual([
        expect.objectContaining({ actor: 'cli', action: 'key.rotated', tenant_id: tenant.tenantId }),
      ]);

      const refused = cli(['keys', 'rotate', '--tenant', 'cli-keys', '--json']);
      await expect(refused).rejects.toBeInstanceOf(CliError);
      await expect(refused).rejects.toThrow(/emergency/);

      const text = await cli(['keys', 'rotate', '--tenant', 'cli-keys', '--emergency']);
      const replaced = await signingKid(tenant);
      expect(text).toContain(`New ticket key ${replaced} of cli-keys signs now`);
      expect(text).toContain("installer's tools");
      expect(kidsOf(await tenantJwks('cli-keys'))).toEqual([replaced]);
    });

    it('names an unknown tenant, refuses --emergency without --tenant, and still rotates the access-token key without it', async () => {
      await expect(cli(['keys', 'rotate', '--tenant', 'nobody'])).rejects.toThrow('No tenant nobody.');
      await expect(cli(['keys', 'rotate', '--emergency'])).rejects.toMatchObject({ exitCode: 2 });
      const previous = (await t.app.services.accessTokenKeys.signingKey()).kid;
      const rotated = JSON.parse(await cli(['keys', 'rotate', '--json']));
      expect(rotated).toEqual({ kid: expect.any(String), retired: [previous] });
      // An access-token key signs at once; the retired one stays published for the tokens it signed.
      expect((await t.app.services.accessTokenKeys.signingKey()).kid).toBe(rotated.kid);
      const published = kidsOf((await t.app.inject({ url: '/.well-known/jwks.json' })).json());
      expect(published).toEqual([previous, rotated.kid].sort());
      expect(await cli(['keys', 'rotate', '--help'])).toContain('--tenant NAME');
    });
  });
});
