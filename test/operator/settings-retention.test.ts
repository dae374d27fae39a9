// Retention per tenant (docs/api-reference.md 16.1): `retention` in GET and PATCH /operatorapi/settings, the instance's
// defaults for tenants that chose none, refusals that change nothing, and prunes and reads that apply each tenant's
// own periods: the event feed its eventDays, the audit trail its auditDays, the access log its accessLogDays.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { lockToken } from '../helpers/device.js';
import { bearer, clientToken, createClient } from '../helpers/oauth.js';
import { call, device, expectAuthChecks, expectProblem, HOUR, lock } from '../helpers/operator.js';
import { twoTenants, type TwoTenants } from '../helpers/tenants.js';

const DAY = 24 * HOUR;
/** The instance's periods in this file: none of them the built-in defaults, so a test sees which one applies. */
const DEFAULTS = { accessLogDays: 200, eventDays: 20, auditDays: 400 };

describe('retention periods per tenant', () => {
  let t: TestApp;
  let tenants: TwoTenants;
  let offset = 0;

  beforeAll(async () => {
    t = await buildTestApp(
      {
        BCRYPT_COST: '4',
        ACCESS_LOG_RETENTION_DAYS: String(DEFAULTS.accessLogDays),
        EVENT_RETENTION_DAYS: String(DEFAULTS.eventDays),
        AUDIT_RETENTION_DAYS: String(DEFAULTS.auditDays),
      },
      { clock: () => Date.now() + offset },
    );
    tenants = await twoTenants(t);
  });
  afterAll(async () => {
    await t.close();
  });

  /** A management token valid at the clock's current offset. */
  const acmeToken = () => clientToken(t.app, tenants.acme);
  const otherToken = () => clientToken(t.app, tenants.other);
  const settings = async (token: string, body?: object) =>
    body === undefined
      ? t.app.inject({ method: 'GET', url: '/operatorapi/settings', headers: bearer(token) })
      : t.app.inject({ method: 'PATCH', url: '/operatorapi/settings', headers: bearer(token), payload: body });

  async function storedChoices(tenantId: string) {
    const { rows } = await t.database.db.query<{ a: number | null; e: number | null; u: number | null }>(
      'SELECT access_log_retention_days AS a, event_retention_days AS e, audit_retention_days AS u FROM tenants WHERE id = $1',
      [tenantId],
    );
    return rows[0];
  }

  async function eventCount(tenantId: string): Promise<number> {
    const { rows } = await t.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_events WHERE tenant_id = $1', [tenantId]);
    return rows[0]!.n;
  }

  it("answers the instance's periods for a tenant that chose none", async () => {
    const response = await settings(await acmeToken());
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toEqual({ holderBinding: 'optional', retention: DEFAULTS });
    expect(await storedChoices(tenants.acme.tenantId)).toEqual({ a: null, e: null, u: null });
  });

  it('sets the periods named, leaves the others, audits the change, and null follows the default again', async () => {
    const token = await acmeToken();
    const changed = await settings(token, { retention: { accessLogDays: 90, eventDays: 7 } });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json()).toEqual({ holderBinding: 'optional', retention: { accessLogDays: 90, eventDays: 7, auditDays: DEFAULTS.auditDays } });
    expect(await storedChoices(tenants.acme.tenantId)).toEqual({ a: 90, e: 7, u: null });
    // The other tenant keeps the instance's periods.
    expect((await settings(await otherToken())).json()).toEqual({ holderBinding: 'optional', retention: DEFAULTS });

    const { rows } = await t.database.db.query<{ data: Record<string, unknown> }>(
      "SELECT data FROM audit_events WHERE tenant_id = $1 AND action = 'settings.updated' ORDER BY seq DESC LIMIT 1",
      [tenants.acme.tenantId],
    );
    expect(rows[0]!.data).toEqual({ retention: { accessLogDays: 90, eventDays: 7 } });

    const reset = await settings(token, { retention: { eventDays: null } });
    expect(reset.json()).toEqual({ holderBinding: 'optional', retention: { accessLogDays: 90, eventDays: DEFAULTS.eventDays, auditDays: DEFAULTS.auditDays } });
    expect(await storedChoices(tenants.acme.tenantId)).toEqual({ a: 90, e: null, u: null });
    // The policy and the periods in one request.
    const both = await settings(token, { holderBinding: 'optional', retention: { accessLogDays: null } });
    expect(both.json()).toEqual({ holderBinding: 'optional', retention: DEFAULTS });
  });

  it('refuses a period out of bounds, not a whole number, unknown or empty with 400, and changes nothing', async () => {
    const token = await acmeToken();
    await settings(token, { retention: { auditDays: 500 } });
    const before = { stored: await storedChoices(tenants.acme.tenantId), events: await eventCount(tenants.acme.tenantId) };
    for (const retention of [{}, { accessLogDays: 0 }, { eventDays: 3651 }, { auditDays: 1.5 }, { eventDays: '30' }, { days: 30 }, null, 30]) {
      const refused = await settings(token, { retention });
      expect(expectProblem(refused, 400).status, JSON.stringify(retention)).toBe(400);
    }
    expect({ stored: await storedChoices(tenants.acme.tenantId), events: await eventCount(tenants.acme.tenantId) }).toEqual(before);
    await settings(token, { retention: { auditDays: null } });
  });

  it('needs settings:manage', async () => {
    const reader = await createClient(t.app, tenants.acme, ['devices:read']);
    await expectAuthChecks(t, await clientToken(t.app, reader), [
      { method: 'GET', url: '/operatorapi/settings', scope: 'settings:manage' },
      { method: 'PATCH', url: '/operatorapi/settings', payload: { retention: { eventDays: 1 } }, scope: 'settings:manage' },
    ]);
  });

  it('serves the feed within eventDays and the audit trail within auditDays, and prunes a record once both are over', async () => {
    const acme = await acmeToken();
    expect((await settings(acme, { retention: { eventDays: 1, auditDays: 10 } })).statusCode).toBe(200);
    await device(t, acme, 'kept-a-while');
    await device(t, await otherToken(), 'kept-a-while');
    const acmeEvents = await eventCount(tenants.acme.tenantId);
    const otherEvents = await eventCount(tenants.other.tenantId);
    const feedHas = async (token: string) => {
      const response = await call(t, token, { method: 'GET', url: '/operatorapi/events?after=0&limit=1000' });
      expect(response.statusCode, response.body).toBe(200);
      return (response.json() as { type: string; data: { mobileDeviceId?: string } }[]).some(
        (event) => event.type === 'mobile_device.created' && event.data.mobileDeviceId === 'kept-a-while',
      );
    };
    const auditHas = async (token: string) => {
      const response = await call(t, token, { method: 'GET', url: '/operatorapi/audit-events?target=mobile_device:kept-a-while&limit=100' });
      expect(response.statusCode, response.body).toBe(200);
      return (response.json() as unknown[]).length > 0;
    };
    expect([await feedHas(acme), await auditHas(acme)]).toEqual([true, true]);

    offset += 2 * DAY;
    try {
      const acmeLater = await acmeToken();
      const otherLater = await otherToken();
      // Past acme's eventDays, within its auditDays: out of the feed, still in the audit trail, and kept.
      expect([await feedHas(acmeLater), await auditHas(acmeLater)]).toEqual([false, true]);
      // The other tenant's instance periods (20 and 400 days) show both.
      expect([await feedHas(otherLater), await auditHas(otherLater)]).toEqual([true, true]);
      await t.app.services.audit.prune();
      expect(await eventCount(tenants.acme.tenantId)).toBeGreaterThanOrEqual(acmeEvents);

      offset += 9 * DAY;
      const acmeAfter = await acmeToken();
      expect(await auditHas(acmeAfter)).toBe(false);
      const pruned = await t.app.services.audit.prune();
      // Every acme event written before the clock moved is past 10 days; the other tenant's are within its 400.
      expect(pruned).toBe(acmeEvents);
      expect(await eventCount(tenants.other.tenantId)).toBeGreaterThanOrEqual(otherEvents);
      const { rows } = await t.database.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM audit_events WHERE tenant_id = $1 AND time < $2::bigint',
        [tenants.acme.tenantId, Date.now() + offset - 10 * DAY],
      );
      expect(rows[0]!.n).toBe(0);
    } finally {
      offset -= 11 * DAY;
    }
    await settings(await acmeToken(), { retention: { eventDays: null, auditDays: null } });
  });

  it("prunes access-log entries past each tenant's accessLogDays", async () => {
    const acme = await acmeToken();
    const other = await otherToken();
    await lock(t, acme, 'lobby');
    await lock(t, other, 'lobby');
    expect((await settings(acme, { retention: { accessLogDays: 3 } })).statusCode).toBe(200);
    const upload = async (tenant: TwoTenants['acme']) => {
      const response = await t.app.inject({
        method: 'POST',
        url: '/deviceapi/securedobjects/lobby/accesslog',
        headers: bearer(await lockToken(t, tenant, 'lobby')),
        payload: { entries: [1, 2].map((entryNo) => ({ entryNo, lockTime: Date.now() + offset, command: 'open', channel: 'btlespp', result: 'granted' })) },
      });
      expect(response.statusCode, response.body).toBe(200);
    };
    await upload(tenants.acme);
    await upload(tenants.other);
    const stored = async (tenantId: string) => {
      const { rows } = await t.database.db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM access_log_entries WHERE tenant_id = $1 AND secured_object_id = 'lobby'",
        [tenantId],
      );
      return rows[0]!.n;
    };
    offset += 2 * DAY;
    try {
      expect(await t.app.services.accessLogRetention.prune()).toBe(0);
      offset += 2 * DAY;
      expect(await t.app.services.accessLogRetention.prune()).toBe(2);
      expect([await stored(tenants.acme.tenantId), await stored(tenants.other.tenantId)]).toEqual([0, 2]);
    } finally {
      offset -= 4 * DAY;
    }
  });

  it("prunes finished bulk jobs and their items past each tenant's eventDays, never a job still to run", async () => {
    expect((await settings(await acmeToken(), { retention: { eventDays: 2 } })).statusCode).toBe(200);
    const now = Date.now() + offset;
    const job = async (tenantId: string, state: string, finishedAt: number | null) => {
      const { rows } = await t.database.db.query<{ id: string }>(
        `INSERT INTO jobs (tenant_id, id, type, state, total, processed, succeeded, failed, actor, created_at, finished_at)
         VALUES ($1, gen_random_uuid(), 'mobile-devices', $2, 1, $3, $3, 0, 'cli', $4, $5) RETURNING id`,
        [tenantId, state, state === 'queued' ? 0 : 1, now - 10 * DAY, finishedAt],
      );
      await t.database.db.query(
        `INSERT INTO job_items (tenant_id, job_id, item_index, key, item, outcome, resource_id)
         VALUES ($1, $2, 0, 'phone-x', '{"id":"phone-x","name":"Xavier Oldjob"}', $3, $4)`,
        [tenantId, rows[0]!.id, state === 'queued' ? null : 'created', state === 'queued' ? null : 'phone-x'],
      );
      return rows[0]!.id;
    };
    const old = await job(tenants.acme.tenantId, 'succeeded', now - 3 * DAY);
    const young = await job(tenants.acme.tenantId, 'failed', now - DAY);
    const waiting = await job(tenants.acme.tenantId, 'queued', null);
    const othersOld = await job(tenants.other.tenantId, 'cancelled', now - 3 * DAY);
    expect(await t.app.services.jobRetention.prune()).toBe(1);
    const { rows } = await t.database.db.query<{ id: string }>('SELECT job_id AS id FROM job_items WHERE job_id = ANY ($1::uuid[]) ORDER BY job_id', [
      [old, young, waiting, othersOld],
    ]);
    expect(rows.map((row) => row.id).sort()).toEqual([young, waiting, othersOld].sort());
    await settings(await acmeToken(), { retention: { eventDays: null } });
  });
});
