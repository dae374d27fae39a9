// The bulk-job worker (docs/api-reference.md 14): a batch of access permissions granted set-based as the single endpoint
// grants each, jobs of several tenants side by side, and bounded retries of an item the service fails (5xx) while a
// refused one (4xx) is recorded at once. Faults are injected into the database port the worker uses.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database, TransactionScope } from '../../src/db/database.js';
import { accessTenant, grant, lockGroup, permissionBody, resident, type AccessTenant } from '../helpers/access.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { clientToken, createClient } from '../helpers/oauth.js';
import { call, device, HOUR, lock, UUID_PATTERN, walk } from '../helpers/operator.js';

const JOB_SCOPES = ['devices:write', 'devices:read', 'device-groups:write', 'access-permissions:write', 'tokens:create', 'tokens:read'];
const DAY = 24 * HOUR;

interface JobBody {
  id: string;
  state: string;
  total: number;
  processed: number;
  succeeded: number;
  failed: number;
}

interface ResultBody {
  index: number;
  outcome: string;
  id?: string;
  problem?: Record<string, unknown> & { status: number };
}

/** An error as the database driver raises it. */
const databaseError = (message: string, code?: string) => Object.assign(new Error(message), code ? { code } : {});

describe('bulk job worker', () => {
  let t: TestApp;
  let a: AccessTenant;
  let b: AccessTenant;
  let aJobs: string;
  let bJobs: string;
  /** Throws instead of running a statement of a transaction when it answers an error (the database port's faults). */
  let fault: ((text: string, params: readonly unknown[]) => Error | null) | null = null;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' });
    // Driven round by round below.
    await t.app.services.jobWorker.stop();
    const db: Database = t.database.db;
    const transaction = db.transaction.bind(db);
    db.transaction = <T>(work: (tx: TransactionScope) => Promise<T>) =>
      transaction((tx) =>
        work({
          ...tx,
          query: (text, params) => {
            const error = fault?.(text, params ?? []);
            if (error) return Promise.reject(error);
            return tx.query(text, params);
          },
        }),
      );
    a = await accessTenant(t, 'jobs-a');
    b = await accessTenant(t, 'jobs-b');
    aJobs = await clientToken(t.app, await createClient(t.app, a.tenant, JOB_SCOPES));
    bJobs = await clientToken(t.app, await createClient(t.app, b.tenant, JOB_SCOPES));
  });
  afterAll(async () => {
    fault = null;
    await t.close();
  });

  const send = async (token: string, type: string, items: object[]): Promise<string> => {
    const response = await call(t, token, { method: 'POST', url: '/operatorapi/jobs', payload: { type, items } });
    expect(response.statusCode, response.body).toBe(202);
    return response.json<JobBody>().id;
  };
  const job = async (token: string, id: string) => (await call(t, token, { method: 'GET', url: `/operatorapi/jobs/${id}` })).json<JobBody>();
  const results = async (token: string, id: string) => (await walk<ResultBody>(t, token, `/operatorapi/jobs/${id}/results?limit=100`)).items;
  /** A problem as a job records it: without what belongs to one request. */
  const problemOf = (body: Record<string, unknown>) => {
    const { instance: _instance, requestId: _requestId, ...rest } = body;
    return rest;
  };

  it('a batch of access permissions: each granted or refused as the single endpoint does it, with its tickets and events', async () => {
    for (const id of ['a-door-1', 'a-door-2']) await lock(t, a.operator, id);
    for (const id of ['a-phone-1', 'a-phone-2', 'a-phone-3']) await device(t, a.operator, id);
    const group = await lockGroup(t, a.token, 'A building', ['a-door-1', 'a-door-2']);
    const empty = await lockGroup(t, a.token, 'A empty');
    const ann = await resident(t, a.token, 'Ann', ['a-phone-1', 'a-phone-2']);
    const bob = await resident(t, a.token, 'Bob', ['a-phone-3']);
    const cem = await resident(t, a.token, 'Cem');
    const now = t.app.services.clock();
    const weekdays = { weekly: [{ days: ['MO', 'TU', 'WE', 'TH', 'FR'], from: '08:00', to: '12:00' }] };
    // Built once: the same body again must carry the same dates, which the clock would otherwise move between the two.
    const annsGrant = permissionBody(t, ann.id, group.id);
    const items = [
      annsGrant,
      permissionBody(t, bob.id, group.id, { endDate: now + 14 * DAY, schedule: weekdays }),
      // Refused: an unknown resident, a lock group of another tenant's id space, dates the wrong way round, an empty schedule.
      permissionBody(t, '00000000-0000-4000-8000-000000000000', group.id),
      permissionBody(t, cem.id, 'not-a-uuid'),
      permissionBody(t, cem.id, group.id, { beginDate: now + HOUR, endDate: now }),
      permissionBody(t, cem.id, group.id, { schedule: { weekly: [] } }),
      // The first item again: found, as one request after the other would find it.
      annsGrant,
      permissionBody(t, cem.id, empty.id),
    ];
    const id = await send(aJobs, 'access-permissions', items);
    expect(await t.app.services.jobWorker.runOnce()).toBe(true);
    expect(await job(aJobs, id)).toMatchObject({ state: 'failed', total: 8, processed: 8, succeeded: 4, failed: 4 });
    const outcomes = await results(aJobs, id);
    expect(outcomes.map((result) => result.outcome)).toEqual(['created', 'created', 'failed', 'failed', 'failed', 'failed', 'unchanged', 'created']);
    expect(outcomes[6]!.id).toBe(outcomes[0]!.id);

    // Each refusal is the problem the single endpoint answers for the same body.
    for (const index of [2, 3, 4, 5]) {
      const single = await grant(t, a.token, items[index]!);
      expect(single.statusCode).toBe(422);
      expect(outcomes[index]!.problem).toEqual(problemOf(single.json()));
    }

    // The tickets and events of each grant, as the single endpoint makes them.
    const granted = [outcomes[0]!.id!, outcomes[1]!.id!, outcomes[7]!.id!];
    const tokenCounts = await Promise.all(
      granted.map(async (permissionId) => (await call(t, a.token, { method: 'GET', url: `/v1/access-permissions/${permissionId}` })).json().tokenCount),
    );
    expect(tokenCounts).toEqual([4, 2, 0]);
    const { rows: schedules } = await t.database.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM tickets WHERE tenant_id = $1 AND access_permission_id = $2 AND schedule IS NOT NULL',
      [a.tenant.tenantId, outcomes[1]!.id],
    );
    expect(schedules[0]!.n).toBe(2);
    // Granted together (set-based): the batch's tickets share one change number.
    const { rows: changes } = await t.database.db.query<{ seqs: number }>(
      'SELECT count(DISTINCT change_seq)::int AS seqs FROM tickets WHERE tenant_id = $1 AND access_permission_id = ANY ($2::uuid[])',
      [a.tenant.tenantId, granted],
    );
    expect(changes[0]!.seqs).toBe(1);
    const { rows: events } = await t.database.db.query<{ action: string; target: string; data: Record<string, unknown>; actor: string }>(
      `SELECT action, target, data, actor FROM audit_events WHERE tenant_id = $1 AND target LIKE 'access_permission:%' ORDER BY seq`,
      [a.tenant.tenantId],
    );
    for (const [at, permissionId] of granted.entries()) {
      const own = events.filter((event) => event.target === `access_permission:${permissionId}`);
      const expected = [4, 2, 0][at]!;
      expect(own.map((event) => event.action)).toEqual([...(expected > 0 ? ['ticket.created'] : []), 'access_permission.created']);
      expect(own.at(-1)!.data).toEqual({ accessPermissionId: permissionId, residentId: items[[0, 1, 7][at]!]!.residentId, lockGroupId: items[[0, 1, 7][at]!]!.lockGroupId, ticketCount: expected });
      if (expected > 0) expect(own[0]!.data).toEqual({ accessPermissionId: permissionId, ticketIds: expect.any(Array) });
      if (expected > 0) expect((own[0]!.data.ticketIds as string[]).length).toBe(expected);
      expect(own.every((event) => event.actor.startsWith('client:'))).toBe(true);
    }

    // Ids in capitals name the same groups, alone as in a batch.
    const upper = await grant(t, a.token, permissionBody(t, bob.id.toUpperCase(), group.id.toUpperCase(), { endDate: now + 2 * HOUR }));
    expect(upper.statusCode, upper.body).toBe(201);
    expect(upper.json().tokenCount).toBe(2);
    const capitals = await send(aJobs, 'access-permissions', [
      permissionBody(t, bob.id.toUpperCase(), group.id.toUpperCase(), { endDate: now + 3 * HOUR }),
      permissionBody(t, ann.id.toUpperCase(), group.id.toUpperCase(), { endDate: now + 3 * HOUR }),
    ]);
    await t.app.services.jobWorker.runOnce();
    expect(await job(aJobs, capitals)).toMatchObject({ state: 'succeeded', succeeded: 2 });

    // A re-run: every granted item unchanged, every refused one refused again.
    const again = await send(aJobs, 'access-permissions', items);
    await t.app.services.jobWorker.runOnce();
    const rerun = await results(aJobs, again);
    expect(rerun.map((result) => result.outcome)).toEqual(['unchanged', 'unchanged', 'failed', 'failed', 'failed', 'failed', 'unchanged', 'unchanged']);
    expect(rerun.map((result) => result.id ?? null)).toEqual(outcomes.map((result) => (result.outcome === 'failed' ? null : result.id)));
  });

  it('jobs of two tenants side by side: a small job sent after a large one ends in the first round', async () => {
    const large = await send(aJobs, 'mobile-devices', Array.from({ length: 2500 }, (_, n) => ({ id: `fair-a-${n}` })));
    const small = await send(bJobs, 'mobile-devices', [{ id: 'fair-b-1' }, { id: 'fair-b-2' }, { id: 'fair-b-3' }]);
    expect(await t.app.services.jobWorker.runRound()).toBe(true);
    expect(await job(bJobs, small)).toMatchObject({ state: 'succeeded', processed: 3 });
    const first = await job(aJobs, large);
    expect(first).toMatchObject({ state: 'running' });
    expect(first.processed).toBeGreaterThan(0);
    expect(first.processed).toBeLessThan(2500);
    // Stopped with the large job unfinished: its lease given back, for any instance to take on at once.
    await t.app.services.jobWorker.stop();
    const { rows } = await t.database.db.query<{ state: string; lease_until: string | null }>('SELECT state, lease_until FROM jobs WHERE tenant_id = $1 AND id = $2', [
      a.tenant.tenantId,
      large,
    ]);
    expect(rows).toEqual([{ state: 'running', lease_until: null }]);
    expect(await t.app.services.jobWorker.runOnce()).toBe(true);
    expect(await job(aJobs, large)).toMatchObject({ state: 'succeeded', processed: 2500, succeeded: 2500 });
  });

  it('a transient database failure (deadlock) is retried: every item applied once', async () => {
    let failures = 0;
    fault = (text) => (text.includes('INSERT INTO mobile_devices') && failures++ < 2 ? databaseError('deadlock detected', '40P01') : null);
    try {
      const id = await send(aJobs, 'mobile-devices', Array.from({ length: 20 }, (_, n) => ({ id: `retry-${n}`, name: `Retry ${n}` })));
      expect(await t.app.services.jobWorker.runOnce()).toBe(true);
      expect(failures).toBeGreaterThanOrEqual(2);
      expect(await job(aJobs, id)).toMatchObject({ state: 'succeeded', processed: 20, succeeded: 20, failed: 0 });
      expect(new Set((await results(aJobs, id)).map((result) => result.outcome))).toEqual(new Set(['created']));
    } finally {
      fault = null;
    }
    const { rows } = await t.database.db.query<{ devices: number; events: number }>(
      `SELECT (SELECT count(*)::int FROM mobile_devices WHERE tenant_id = $1 AND id LIKE 'retry-%') AS devices,
              (SELECT count(*)::int FROM audit_events WHERE tenant_id = $1 AND action = 'mobile_device.created' AND target LIKE 'mobile_device:retry-%') AS events`,
      [a.tenant.tenantId],
    );
    expect(rows[0]).toEqual({ devices: 20, events: 20 });
  });

  it('an item the service fails every time (5xx) is tried a bounded number of times, then recorded failed; the others are applied', async () => {
    let tries = 0;
    fault = (text, params) => {
      if (!text.includes('INSERT INTO mobile_devices') || !JSON.stringify(params).includes('cursed')) return null;
      // The item's own insert (register's), not the batch's set-based one.
      if (!JSON.stringify(params).includes('fine-')) tries += 1;
      return databaseError('could not write block: no space left on device');
    };
    try {
      const items = [{ id: 'fine-1' }, { id: 'cursed' }, { id: 'fine-2' }];
      const id = await send(aJobs, 'mobile-devices', items);
      expect(await t.app.services.jobWorker.runOnce()).toBe(true);
      expect(await job(aJobs, id)).toMatchObject({ state: 'failed', processed: 3, succeeded: 2, failed: 1 });
      const outcomes = await results(aJobs, id);
      expect(outcomes.map((result) => [result.outcome, result.id ?? null])).toEqual([
        ['created', 'fine-1'],
        ['failed', null],
        ['created', 'fine-2'],
      ]);
      expect(outcomes[1]!.problem).toEqual({
        type: 'https://access-credential-service.dev/problems/internal',
        title: 'Internal Server Error',
        status: 500,
        detail: expect.any(String),
      });
      // The batch tried twice (its set-based statement, then its items one by one in the same transaction, reaching
      // this one), then the item alone four times (RETRY.attempts in services/job-worker.ts).
      expect(tries).toBe(2 + 4);
    } finally {
      fault = null;
    }
    const { rows } = await t.database.db.query<{ id: string }>(
      "SELECT id FROM mobile_devices WHERE tenant_id = $1 AND id IN ('fine-1', 'fine-2', 'cursed') ORDER BY id",
      [a.tenant.tenantId],
    );
    expect(rows.map((row) => row.id)).toEqual(['fine-1', 'fine-2']);
  });

  it('a database hiccup on every try ends as the 503 its endpoint answers; a refusal (4xx) is recorded at once, untried again', async () => {
    fault = (text, params) =>
      text.includes('INSERT INTO mobile_devices') && JSON.stringify(params).includes('busy-') ? databaseError('canceling statement due to conflict', '40001') : null;
    try {
      const id = await send(aJobs, 'mobile-devices', [{ id: 'busy-1' }]);
      expect(await t.app.services.jobWorker.runOnce()).toBe(true);
      const [result] = await results(aJobs, id);
      expect(result).toMatchObject({ outcome: 'failed', problem: { status: 503, type: 'https://access-credential-service.dev/problems/unavailable' } });
    } finally {
      fault = null;
    }

    // A device id in use with another name: the endpoint's 409, after one insert (register's), never tried again.
    await device(t, a.operator, 'taken-once', 'first');
    let inserts = 0;
    fault = (text, params) => {
      if (text.includes('INSERT INTO mobile_devices') && JSON.stringify(params).includes('taken-once')) inserts += 1;
      return null;
    };
    try {
      const refused = await send(aJobs, 'mobile-devices', [{ id: 'taken-once', name: 'second' }]);
      expect(refused).toMatch(UUID_PATTERN);
      expect(await t.app.services.jobWorker.runOnce()).toBe(true);
      const [conflict] = await results(aJobs, refused);
      expect(conflict).toMatchObject({ outcome: 'failed', problem: { status: 409, detail: 'The mobile device id taken-once is in use.' } });
      expect(inserts).toBe(1);
    } finally {
      fault = null;
    }
  });
});
