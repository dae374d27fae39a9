// The domain metrics of GET /metrics (README "Metrics"): each moves when its action happens, by what it did, and
// not when the action is refused or its transaction rolled back; no label ever carries a tenant, client or lock id.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/database.js';
import { createAccessPermissionService } from '../../src/services/access-permission.service.js';
import { createGroupService } from '../../src/services/group.service.js';
import { LOCK_GROUPS } from '../../src/db/repositories/group.repo.js';
import { noMetrics, type DomainMetrics } from '../../src/services/domain-metrics.js';
import { parseRevivedInterfaces } from '../../src/shared/vocabulary.js';
import { accessTenant, grant, join, leave, lockGroup, permission, permissionBody, resident, ticketRows, v1, type AccessTenant } from '../helpers/access.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { download, lockToken, phoneToken, sync, syncRequest } from '../helpers/device.js';
import { movedBy, scrape, type Series } from '../helpers/metrics.js';
import { createClient, passwordGrant, tokenRequest } from '../helpers/oauth.js';
import { call, device, expectProblem, issueTicket, lock, ticket, ticketBody } from '../helpers/operator.js';

const THRESHOLD = 3;

const grants = (grant_type: string, outcome: string): Series => ['oauth_grants_total', { grant_type, outcome }];
const created: Series = ['tickets_created_total'];
const revoked: Series = ['tickets_revoked_total'];

describe('domain metrics', () => {
  let t: TestApp;
  let acme: AccessTenant;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4', LOCKOUT_THRESHOLD: String(THRESHOLD) });
    acme = await accessTenant(t, 'metrics');
  });
  afterAll(async () => {
    await t.close();
  });

  describe('oauth_grants_total', () => {
    it('counts each answer of the token endpoint by grant type and outcome', async () => {
      const moved = await movedBy(
        t,
        [grants('client_credentials', 'success'), grants('client_credentials', 'invalid_client'), grants('password', 'success'), grants('password', 'invalid_grant'), grants('password', 'invalid_scope'), ['oauth_grants_total']],
        async () => {
          expect((await tokenRequest(t.app, acme.tenant, { grant_type: 'client_credentials' })).statusCode).toBe(200);
          expect((await tokenRequest(t.app, acme.tenant, { grant_type: 'client_credentials' })).statusCode).toBe(200);
          expect((await tokenRequest(t.app, { ...acme.tenant, clientSecret: 'wrong' }, { grant_type: 'client_credentials' })).statusCode).toBe(401);
          expect((await passwordGrant(t.app, acme.client, acme.login, 'correct horse battery staple')).statusCode).toBe(200);
          expect((await passwordGrant(t.app, acme.client, `nobody@${acme.tenant.name}`, 'x')).statusCode).toBe(400);
          expect((await passwordGrant(t.app, acme.client, acme.login, 'correct horse battery staple', 'tickets:write')).statusCode).toBe(400);
        },
      );
      expect(moved).toEqual({
        'oauth_grants_total{grant_type=client_credentials,outcome=success}': 2,
        'oauth_grants_total{grant_type=client_credentials,outcome=invalid_client}': 1,
        'oauth_grants_total{grant_type=password,outcome=success}': 1,
        'oauth_grants_total{grant_type=password,outcome=invalid_grant}': 1,
        'oauth_grants_total{grant_type=password,outcome=invalid_scope}': 1,
        oauth_grants_total: 6,
      });
    });

    it('does not count a request that names no supported grant type: it is not a grant', async () => {
      const moved = await movedBy(t, [['oauth_grants_total']], async () => {
        // authorization_code is a grant since the console's sign-in (docs/api-reference.md 3.8); implicit never is.
        expect((await tokenRequest(t.app, acme.tenant, { grant_type: 'implicit' })).statusCode).toBe(400);
        expect((await tokenRequest(t.app, acme.tenant, {})).statusCode).toBe(400);
      });
      expect(moved).toEqual({ oauth_grants_total: 0 });
    });
  });

  describe('login_failures_total and login_lockouts_total', () => {
    it('counts wrong passwords, the one lock they start, and the attempts refused while locked', async () => {
      await t.app.services.users.create({ tenantId: acme.tenant.tenantId, actor: 'cli', requestId: null }, 'guessed', 'the right one');
      const login = `guessed@${acme.tenant.name}`;
      const series: Series[] = [['login_failures_total', { reason: 'invalid_credentials' }], ['login_failures_total', { reason: 'locked' }], ['login_lockouts_total']];
      const wrong = await movedBy(t, series, async () => {
        for (let attempt = 0; attempt < THRESHOLD; attempt++) expect((await passwordGrant(t.app, acme.client, login, 'wrong')).statusCode).toBe(400);
      });
      expect(wrong).toEqual({
        'login_failures_total{reason=invalid_credentials}': THRESHOLD,
        'login_failures_total{reason=locked}': 0,
        login_lockouts_total: 1,
      });
      // Locked: even the right password is refused unchecked, and the lock is not counted again.
      const locked = await movedBy(t, series, async () => {
        expect((await passwordGrant(t.app, acme.client, login, 'the right one')).statusCode).toBe(400);
        expect((await passwordGrant(t.app, acme.client, login, 'wrong')).statusCode).toBe(400);
      });
      expect(locked).toEqual({
        'login_failures_total{reason=invalid_credentials}': 0,
        'login_failures_total{reason=locked}': 2,
        login_lockouts_total: 0,
      });
    });

    it('does not count a successful login', async () => {
      const moved = await movedBy(t, [['login_failures_total'], ['login_lockouts_total']], async () => {
        expect((await passwordGrant(t.app, acme.client, acme.login, 'correct horse battery staple')).statusCode).toBe(200);
      });
      expect(moved).toEqual({ login_failures_total: 0, login_lockouts_total: 0 });
    });
  });

  describe('tickets_created_total and tickets_revoked_total', () => {
    it('counts a single ticket once, and a refused one not at all', async () => {
      await lock(t, acme.operator, 'single-lock');
      await device(t, acme.operator, 'single-phone');
      let id = '';
      const moved = await movedBy(t, [created, revoked], async () => {
        id = (await ticket(t, acme.operator, 'single-lock', 'single-phone')).id;
        expectProblem(await issueTicket(t, acme.operator, ticketBody(t, 'no-such-lock', 'single-phone')), 422);
      });
      expect(moved).toEqual({ tickets_created_total: 1, tickets_revoked_total: 0 });
      // DELETE is idempotent: the second revocation changes nothing and counts nothing.
      const revocations = await movedBy(t, [created, revoked], async () => {
        for (let i = 0; i < 2; i++) expect((await call(t, acme.operator, { method: 'DELETE', url: `/operatorapi/tickets/${id}` })).statusCode).toBe(200);
      });
      expect(revocations).toEqual({ tickets_created_total: 0, tickets_revoked_total: 1 });
    });

    it('counts every ticket a grant, a membership, a removal and a deletion made or revoked, set by set', async () => {
      for (const id of ['p1', 'p2']) await device(t, acme.operator, id);
      for (const id of ['l1', 'l2', 'l3', 'l4']) await lock(t, acme.operator, id);
      const house = await resident(t, acme.token, 'house', ['p1', 'p2']);
      const doors = await lockGroup(t, acme.token, 'doors', ['l1', 'l2', 'l3']);
      let permissionId = '';
      // 2 devices × 3 locks.
      expect(await movedBy(t, [created], async () => {
        permissionId = (await permission(t, acme.token, house.id, doors.id)).id;
      })).toEqual({ tickets_created_total: 6 });
      // A lock joining: one ticket per device; leaving: those two revoked.
      expect(await movedBy(t, [created, revoked], () => join(t, acme.token, 'lock-groups', doors.id, 'l4'))).toEqual({ tickets_created_total: 2, tickets_revoked_total: 0 });
      expect(await movedBy(t, [created, revoked], () => leave(t, acme.token, 'lock-groups', doors.id, 'l4'))).toEqual({ tickets_created_total: 0, tickets_revoked_total: 2 });
      // A lock removed: its two live tickets.
      expect(await movedBy(t, [revoked], async () => {
        expect((await call(t, acme.operator, { method: 'DELETE', url: '/operatorapi/securedobjects/l3' })).statusCode).toBe(204);
      })).toEqual({ tickets_revoked_total: 2 });
      // The permission deleted: the four still live.
      expect(await movedBy(t, [revoked], async () => {
        expect((await v1(t, acme.token, { method: 'DELETE', url: `/v1/access-permissions/${permissionId}` })).statusCode).toBe(204);
      })).toEqual({ tickets_revoked_total: 4 });
      // A refused grant (its validity already over) makes nothing and counts nothing.
      expect(await movedBy(t, [created], async () => {
        const now = t.app.services.clock();
        expectProblem(await grant(t, acme.token, permissionBody(t, house.id, doors.id, { beginDate: now - 2000, endDate: now - 1000 })), 422);
      })).toEqual({ tickets_created_total: 0 });
    });

    it('counts nothing for a transaction that rolls back after writing its tickets', async () => {
      const phones = ['rb-1', 'rb-2'];
      for (const id of phones) await device(t, acme.operator, id);
      await lock(t, acme.operator, 'rb-lock');
      const household = await resident(t, acme.token, 'rollback house', phones);
      const group = await lockGroup(t, acme.token, 'rollback doors', ['rb-lock']);
      const counted: number[] = [];
      const recorder: DomainMetrics = {
        ...noMetrics,
        ticketsCreated: (count) => counted.push(count),
        ticketsRevoked: (count) => counted.push(-count),
      };
      // Every statement of the transaction runs (the tickets are written), then the commit is refused.
      const db = t.database.db;
      const failingCommit = new Proxy(db, {
        get(target, property) {
          if (property === 'transaction') {
            return (work: Parameters<Database['transaction']>[0]) =>
              target.transaction(async (tx) => {
                await work(tx);
                throw new Error('the commit is refused');
              });
          }
          const value: unknown = Reflect.get(target, property, target);
          return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
        },
      });
      const options = { db: failingCommit, clock: t.app.services.clock, metrics: recorder };
      const permissions = createAccessPermissionService({ ...options, revived: parseRevivedInterfaces('') });
      const context = { tenantId: acme.tenant.tenantId, actor: 'test', requestId: null };
      await expect(permissions.create(context, permissionBody(t, household.id, group.id))).rejects.toThrow('the commit is refused');
      expect(await ticketRows(t, acme.tenant.tenantId, { mobileDeviceId: 'rb-1' })).toEqual([]);

      // Now the grant commits for real; its revocation by a group deletion then rolls back.
      await permission(t, acme.token, household.id, group.id);
      const groups = createGroupService({ ...options, kind: LOCK_GROUPS });
      await expect(groups.delete(context, group.id)).rejects.toThrow('the commit is refused');
      expect((await ticketRows(t, acme.tenant.tenantId, { mobileDeviceId: 'rb-1' })).map((row) => row.revoked_at)).toEqual([null]);
      expect(counted).toEqual([]);
    });
  });

  describe('credentials_signed_total', () => {
    it('counts the credentials a download signs, by algorithm, and not the stored ones it hands out again', async () => {
      await device(t, acme.operator, 'signing-phone');
      for (const id of ['s1', 's2', 's3']) {
        await lock(t, acme.operator, id);
        await ticket(t, acme.operator, id, 'signing-phone');
      }
      const phone = await phoneToken(t, acme.tenant, 'signing-phone');
      const series: Series[] = [['credentials_signed_total', { alg: 'EdDSA' }], ['credentials_signed_total']];
      expect(await movedBy(t, series, async () => expect(await download(t, phone, 'signing-phone')).toHaveLength(3))).toEqual({
        'credentials_signed_total{alg=EdDSA}': 3,
        credentials_signed_total: 3,
      });
      expect(await movedBy(t, series, async () => expect(await download(t, phone, 'signing-phone')).toHaveLength(3))).toEqual({
        'credentials_signed_total{alg=EdDSA}': 0,
        credentials_signed_total: 0,
      });
    });
  });

  describe('lock_syncs_total', () => {
    it('counts syncs with changes, with nothing new, and refused ones', async () => {
      await lock(t, acme.operator, 'syncing-lock');
      const token = await lockToken(t, acme.tenant, 'syncing-lock');
      const series = (['changes', 'nothing_new', 'refused'] as const).map((outcome): Series => ['lock_syncs_total', { outcome }]);
      let cursor = '';
      expect(await movedBy(t, series, async () => {
        cursor = (await sync(t, token, 'syncing-lock')).cursor;
        await sync(t, token, 'syncing-lock', cursor);
        // Another lock's id with this lock's client: refused as missing.
        expect((await syncRequest(t, token, 'single-lock')).statusCode).toBe(404);
      })).toEqual({
        'lock_syncs_total{outcome=changes}': 1,
        'lock_syncs_total{outcome=nothing_new}': 1,
        'lock_syncs_total{outcome=refused}': 1,
      });
      await device(t, acme.operator, 'syncing-phone');
      await ticket(t, acme.operator, 'syncing-lock', 'syncing-phone');
      expect(await movedBy(t, series, async () => {
        expect((await sync(t, token, 'syncing-lock', cursor)).tokens).toHaveLength(1);
      })).toEqual({
        'lock_syncs_total{outcome=changes}': 1,
        'lock_syncs_total{outcome=nothing_new}': 0,
        'lock_syncs_total{outcome=refused}': 0,
      });
    });
  });

  it('never puts a tenant, client, user or lock id into a label', async () => {
    const bound = await createClient(t.app, acme.tenant, ['sync'], { securedObjectId: 'syncing-lock' });
    const text = await scrape(t);
    const labelValues = [...text.matchAll(/="((?:[^"\\]|\\.)*)"/g)].map((match) => match[1]!);
    expect(labelValues.length).toBeGreaterThan(0);
    for (const id of [acme.tenant.tenantId, acme.tenant.name, acme.tenant.clientId, acme.client.clientId, bound.clientId, acme.userId, 'syncing-lock', 'signing-phone']) {
      expect(labelValues.filter((value) => value.includes(id))).toEqual([]);
    }
  });
});
