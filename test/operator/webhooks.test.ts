// /operatorapi/webhooks (docs/api-reference.md 10): subscribe, read, page, change, delete, rotate the secret; the URL guard
// at create and PATCH; validation, scopes, tenants; the secret shown only in the create and rotate answers.
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unsealWebhookSecret } from '../../src/services/webhooks/signing-secrets.js';
import type { Resolver } from '../../src/services/webhooks/url-guard.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { clientToken, createClient, createTenant, type TenantFixture } from '../helpers/oauth.js';
import { auditEvents, call, device, expectAuthChecks, expectProblem, HOUR, UUID_PATTERN, walk } from '../helpers/operator.js';
import { twoTenants } from '../helpers/tenants.js';

/** Names the tests resolve without the DNS: one public, one private, one with both kinds of address. */
const HOSTS: Record<string, string[]> = {
  'hooks.example': ['93.184.215.14'],
  'other-hooks.example': ['2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
  'internal.example': ['10.20.30.40'],
  'mixed.example': ['93.184.215.14', '192.168.1.7'],
  'metadata.example': ['169.254.169.254'],
};
const resolveHost: Resolver = async (hostname) => {
  const addresses = HOSTS[hostname];
  if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
  return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
};

const SECRET_FORMAT = /^whsec_[A-Za-z0-9+/]{43}=$/;

interface WebhookBody {
  id: string;
  url: string;
  eventTypes: string[];
  description?: string;
  enabled: boolean;
  disabledReason?: string;
  disabledTime?: number;
  createdTime: number;
  updatedTime: number;
  previousSecretExpiresTime?: number;
  secret?: string;
}

interface WebhookRow {
  url: string;
  event_types: string[];
  description: string | null;
  enabled: boolean;
  disabled_reason: string | null;
  disabled_at: number | null;
  secret_sealed: Uint8Array;
  previous_secret_sealed: Uint8Array | null;
  previous_secret_until: number | null;
  dispatched_through: number;
  failing_since: number | null;
  updated_at: number;
}

describe('webhook subscriptions', () => {
  let t: TestApp;
  let acme: TenantFixture;
  let other: TenantFixture;
  let token: string;
  let otherToken: string;
  let now = Date.now();

  beforeAll(async () => {
    // The app's own delivery worker waits a minute between rounds: it moves dispatched_through and failing_since, which
    // the "writes nothing" checks compare.
    t = await buildTestApp({ BCRYPT_COST: '4', WEBHOOK_WORKER_INTERVAL_MS: '60000' }, { clock: () => now, resolveHost });
    ({ acme, other, token, otherToken } = await twoTenants(t));
  });
  afterAll(async () => {
    await t.close();
  });

  const create = (body: unknown, auth = token) => call(t, auth, { method: 'POST', url: '/operatorapi/webhooks', payload: body as object });
  const patch = (id: string, body: unknown, auth = token) => call(t, auth, { method: 'PATCH', url: `/operatorapi/webhooks/${id}`, payload: body as object });
  const read = (id: string, auth = token) => call(t, auth, { method: 'GET', url: `/operatorapi/webhooks/${id}` });

  async function subscribe(body: object = {}): Promise<WebhookBody & { secret: string }> {
    const response = await create({ url: 'https://hooks.example/in', eventTypes: ['ticket.created'], ...body });
    expect(response.statusCode, response.body).toBe(201);
    return response.json();
  }

  async function row(id: string): Promise<WebhookRow | undefined> {
    const { rows } = await t.database.db.query<WebhookRow>(
      `SELECT url, event_types, description, enabled, disabled_reason, disabled_at, secret_sealed, previous_secret_sealed,
              previous_secret_until, dispatched_through, failing_since, updated_at
         FROM webhooks WHERE id = $1`,
      [id],
    );
    return rows[0];
  }

  /** Every webhook row and every event of every tenant, to show that a refused request wrote nothing. */
  async function state(): Promise<string> {
    const { rows } = await t.database.db.query<{ webhooks: string; events: number }>(
      `SELECT coalesce((SELECT md5(string_agg(row_to_json(w)::text, '|' ORDER BY w.id)) FROM webhooks w), '') AS webhooks,
              (SELECT count(*)::int FROM audit_events) AS events`,
    );
    return JSON.stringify(rows[0]);
  }

  /** The refusal's problem: 422 with one error on `url` whose message says why. */
  function expectUrlRefused(response: LightMyRequestResponse, reason: RegExp): void {
    const problem = expectProblem(response, 422);
    expect(problem.errors).toEqual([{ field: 'url', message: expect.stringMatching(reason) }]);
  }

  /** Where a secret must never appear: the reads, the event log (its data too) and the logs. */
  async function expectSecretHidden(id: string, secret: string): Promise<void> {
    expect((await read(id)).body).not.toContain(secret);
    expect((await call(t, token, { method: 'GET', url: '/operatorapi/webhooks?limit=1000' })).body).not.toContain(secret);
    const { rows } = await t.database.db.query<{ text: string }>('SELECT row_to_json(e)::text AS text FROM audit_events e');
    expect(rows.length).toBeGreaterThan(0);
    for (const event of rows) expect(event.text).not.toContain(secret.slice('whsec_'.length));
    expect(t.logLines.join('\n')).not.toContain(secret.slice('whsec_'.length));
    // The sealed values hold neither the secret nor its key material in plain text.
    const stored = (await row(id))!;
    for (const sealed of [stored.secret_sealed, stored.previous_secret_sealed]) {
      if (sealed === null) continue;
      const bytes = Buffer.from(sealed);
      expect(bytes.toString('latin1')).not.toContain(secret);
      expect(bytes.includes(Buffer.from(secret.slice('whsec_'.length), 'base64'))).toBe(false);
    }
  }

  it('subscribes, answering the secret once, and starts after the events already committed', async () => {
    await device(t, token, 'phone-before');
    const { rows: counter } = await t.database.db.query<{ last_seq: number }>(
      'SELECT last_seq FROM tenant_audit_counters WHERE tenant_id = $1',
      [acme.tenantId],
    );
    expect(counter[0]!.last_seq).toBeGreaterThan(0);

    const response = await create({ url: 'https://hooks.example/in', eventTypes: ['ticket.created', 'ticket.revoked'], description: 'Front desk' });
    expect(response.statusCode, response.body).toBe(201);
    expect(response.headers['cache-control']).toBe('no-store');
    const body: WebhookBody = response.json();
    expect(body).toEqual({
      id: expect.stringMatching(UUID_PATTERN),
      url: 'https://hooks.example/in',
      eventTypes: ['ticket.created', 'ticket.revoked'],
      description: 'Front desk',
      enabled: true,
      createdTime: now,
      updatedTime: now,
      secret: expect.stringMatching(SECRET_FORMAT),
    });
    expect(Buffer.from(body.secret!.slice('whsec_'.length), 'base64')).toHaveLength(32);
    expect(response.headers.location).toBe(`/operatorapi/webhooks/${body.id}`);

    const got = await read(body.id);
    expect(got.statusCode).toBe(200);
    expect(got.headers['cache-control']).not.toBe('no-store');
    const { secret, ...shown } = body;
    expect(got.json()).toEqual(shown);

    const stored = (await row(body.id))!;
    expect(stored.dispatched_through).toBe(counter[0]!.last_seq);
    expect(unsealWebhookSecret(t.secretsKey, acme.tenantId, body.id, Buffer.from(stored.secret_sealed))).toBe(secret);
    const events = await auditEvents(t, { target: `webhook:${body.id}` });
    expect(events.map((event) => [event.action, event.tenant_id, event.request_id])).toEqual([
      ['webhook.created', acme.tenantId, response.headers['x-request-id']],
    ]);
    await expectSecretHidden(body.id, secret!);
  });

  it('pages the tenant\'s subscriptions oldest first, without secrets, and shows none of another tenant\'s', async () => {
    const { rows } = await t.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM webhooks WHERE tenant_id = $1', [acme.tenantId]);
    const made: (WebhookBody & { secret: string })[] = [];
    for (let i = 0; i < 3; i++) {
      now += 1;
      made.push(await subscribe({ description: `page ${i}` }));
    }
    const { pages, items } = await walk<WebhookBody>(t, token, '/operatorapi/webhooks?limit=2');
    expect(items).toHaveLength(rows[0]!.n + 3);
    expect(pages.every((page) => page.length <= 2)).toBe(true);
    expect(pages.length).toBe(Math.ceil(items.length / 2));
    expect(new Set(items.map((item) => item.id)).size).toBe(items.length);
    expect(items.slice(-3).map((item) => item.id)).toEqual(made.map((m) => m.id));
    expect(items.every((item) => !('secret' in item))).toBe(true);
    for (const m of made) expect(JSON.stringify(items)).not.toContain(m.secret);

    const others = await call(t, otherToken, { method: 'GET', url: '/operatorapi/webhooks' });
    expect(others.statusCode).toBe(200);
    expect(others.json()).toEqual([]);

    expectProblem(await call(t, token, { method: 'GET', url: '/operatorapi/webhooks?cursor=bm9wZQ' }), 400);
  });

  it('changes each field on its own, records webhook.updated, and answers an unchanged PATCH without writing', async () => {
    const hook = await subscribe({ description: 'before' });
    const target = `webhook:${hook.id}`;
    const step = async (body: object, expected: Partial<WebhookBody>) => {
      now += 1000;
      const response = await patch(hook.id, body);
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json()).toMatchObject({ ...expected, updatedTime: now });
      expect(response.body).not.toContain(hook.secret);
      return response.json() as WebhookBody;
    };

    await step({ url: 'https://other-hooks.example/v2' }, { url: 'https://other-hooks.example/v2' });
    await step({ eventTypes: ['ticket.revoked', 'webhook.disabled'] }, { eventTypes: ['ticket.revoked', 'webhook.disabled'] });
    await step({ description: 'after' }, { description: 'after' });
    const cleared = await step({ description: '' }, {});
    expect(cleared).not.toHaveProperty('description');
    expect((await row(hook.id))!.description).toBeNull();

    const paused = await step({ enabled: false }, { enabled: false, disabledReason: 'operator' });
    expect(paused.disabledTime).toBe(now);
    expect((await read(hook.id)).json()).toEqual(paused);
    const resumed = await step({ enabled: true }, { enabled: true });
    expect(resumed).not.toHaveProperty('disabledReason');
    expect(resumed).not.toHaveProperty('disabledTime');
    expect(await auditEvents(t, { target }).then((events) => events.map((event) => event.action))).toEqual([
      'webhook.created',
      ...new Array<string>(6).fill('webhook.updated'),
    ]);

    // Nothing changes: 200, the same subscription, no write and no event.
    const before = await state();
    const updatedTime = (await read(hook.id)).json().updatedTime;
    now += 1000;
    for (const body of [{}, { enabled: true }, { url: 'https://other-hooks.example/v2', eventTypes: ['ticket.revoked', 'webhook.disabled'] }]) {
      const same = await patch(hook.id, body);
      expect(same.statusCode, same.body).toBe(200);
      expect(same.json()).toEqual({ ...resumed, updatedTime });
    }
    expect(await state()).toBe(before);

    const stored = (await row(hook.id))!;
    expect(stored).toMatchObject({ url: 'https://other-hooks.example/v2', event_types: ['ticket.revoked', 'webhook.disabled'], enabled: true });
    expect(unsealWebhookSecret(t.secretsKey, acme.tenantId, hook.id, Buffer.from(stored.secret_sealed))).toBe(hook.secret);
  });

  it('resumes a subscription the service disabled where it stopped, clearing the failure streak', async () => {
    const hook = await subscribe();
    const through = (await row(hook.id))!.dispatched_through;
    await t.database.db.query(
      "UPDATE webhooks SET enabled = false, disabled_reason = 'failing', disabled_at = $2, failing_since = $3 WHERE id = $1",
      [hook.id, now - 1000, now - 5 * 24 * HOUR],
    );
    expect((await read(hook.id)).json()).toMatchObject({ enabled: false, disabledReason: 'failing', disabledTime: now - 1000 });

    // Disabling it again keeps the reason it was disabled for.
    const still = await patch(hook.id, { enabled: false });
    expect(still.json()).toMatchObject({ enabled: false, disabledReason: 'failing' });

    now += 1000;
    const resumed = await patch(hook.id, { enabled: true });
    expect(resumed.statusCode).toBe(200);
    expect(resumed.json()).toMatchObject({ enabled: true, updatedTime: now });
    expect((await row(hook.id))!).toMatchObject({ enabled: true, disabled_reason: null, disabled_at: null, failing_since: null, dispatched_through: through });
  });

  it('deletes a subscription with its deliveries and attempts', async () => {
    const hook = await subscribe();
    await device(t, token, 'phone-delivered');
    const { rows: events } = await t.database.db.query<{ seq: number; event_id: string }>(
      'SELECT seq, event_id FROM audit_events WHERE tenant_id = $1 ORDER BY seq DESC LIMIT 1',
      [acme.tenantId],
    );
    await t.database.db.query(
      "INSERT INTO webhook_deliveries (tenant_id, webhook_id, event_seq, state, attempts, next_attempt_at, created_at) VALUES ($1, $2, $3, 'pending', 1, $4, $4)",
      [acme.tenantId, hook.id, events[0]!.seq, now],
    );
    await t.database.db.query(
      'INSERT INTO webhook_attempts (tenant_id, webhook_id, event_id, time, status_code, duration_ms, next_attempt_at) VALUES ($1, $2, $3, $4, 500, 12, $4)',
      [acme.tenantId, hook.id, events[0]!.event_id, now],
    );

    const deleted = await call(t, token, { method: 'DELETE', url: `/operatorapi/webhooks/${hook.id}` });
    expect(deleted.statusCode, deleted.body).toBe(204);
    expect(await row(hook.id)).toBeUndefined();
    for (const table of ['webhook_deliveries', 'webhook_attempts']) {
      const { rows } = await t.database.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE webhook_id = $1`, [hook.id]);
      expect(rows[0]!.n, table).toBe(0);
    }
    expect((await auditEvents(t, { target: `webhook:${hook.id}` })).map((event) => event.action)).toEqual(['webhook.created', 'webhook.deleted']);
    expectProblem(await read(hook.id), 404);
    expectProblem(await call(t, token, { method: 'DELETE', url: `/operatorapi/webhooks/${hook.id}` }), 404);
  });

  it('rotates the secret: a new one, the previous kept sealed beside it for 24 h, neither ever shown again', async () => {
    const hook = await subscribe();
    const sealedBefore = Buffer.from((await row(hook.id))!.secret_sealed);
    now += 60_000;
    const rotated = await call(t, token, { method: 'POST', url: `/operatorapi/webhooks/${hook.id}/secret` });
    expect(rotated.statusCode, rotated.body).toBe(200);
    expect(rotated.headers['cache-control']).toBe('no-store');
    const body: WebhookBody = rotated.json();
    expect(body).toMatchObject({ id: hook.id, secret: expect.stringMatching(SECRET_FORMAT), previousSecretExpiresTime: now + 24 * HOUR, updatedTime: now });
    expect(body.secret).not.toBe(hook.secret);

    const stored = (await row(hook.id))!;
    expect(stored.previous_secret_until).toBe(now + 24 * HOUR);
    expect(Buffer.from(stored.previous_secret_sealed!).equals(sealedBefore)).toBe(true);
    expect(unsealWebhookSecret(t.secretsKey, acme.tenantId, hook.id, Buffer.from(stored.previous_secret_sealed!))).toBe(hook.secret);
    expect(unsealWebhookSecret(t.secretsKey, acme.tenantId, hook.id, Buffer.from(stored.secret_sealed))).toBe(body.secret);
    expect((await auditEvents(t, { target: `webhook:${hook.id}` })).map((event) => event.action)).toEqual(['webhook.created', 'webhook.secret_rotated']);

    const { secret, ...shown } = body;
    expect((await read(hook.id)).json()).toEqual(shown);
    await expectSecretHidden(hook.id, secret!);
    await expectSecretHidden(hook.id, hook.secret);

    // After 24 h the previous secret no longer signs, and the answer stops naming it.
    now += 24 * HOUR + 1;
    token = await clientToken(t.app, acme);
    otherToken = await clientToken(t.app, other);
    expect((await read(hook.id)).json()).not.toHaveProperty('previousSecretExpiresTime');
  });

  it('refuses URLs that are not https or reach loopback, private, link-local or metadata addresses, at create and PATCH', async () => {
    const hook = await subscribe();
    const before = await state();
    const refusals: [string, RegExp][] = [
      ['http://hooks.example/in', /must be an https URL/],
      ['https://127.0.0.1/in', /127\.0\.0\.1.*loopback or private/],
      ['https://[::1]:8443/in', /::1.*loopback or private/],
      ['https://10.1.2.3/in', /10\.1\.2\.3.*loopback or private/],
      ['https://192.168.0.10/in', /loopback or private/],
      ['https://[::ffff:172.16.0.1]/in', /loopback or private/],
      ['https://169.254.169.254/latest/meta-data', /169\.254\.169\.254.*never allowed/],
      ['https://[fe80::1]/in', /never allowed/],
      ['https://internal.example/in', /10\.20\.30\.40.*loopback or private/],
      ['https://mixed.example/in', /192\.168\.1\.7.*loopback or private/],
      ['https://metadata.example/in', /169\.254\.169\.254.*never allowed/],
      ['https://nowhere.example/in', /cannot be resolved/],
      ['https://user:pass@hooks.example/in', /user name or password/],
      ['not a url', /absolute URL/],
    ];
    for (const [url, reason] of refusals) {
      expectUrlRefused(await create({ url, eventTypes: ['ticket.created'] }), reason);
      expectUrlRefused(await patch(hook.id, { url, description: 'changed' }), reason);
    }
    expect(await state()).toBe(before);
    expect((await row(hook.id))!.url).toBe('https://hooks.example/in');
  });

  it('refuses malformed bodies with 400 naming the field, and writes nothing', async () => {
    const hook = await subscribe();
    const before = await state();
    const cases: [object, string, RegExp?][] = [
      [{ url: 'https://hooks.example/in', eventTypes: [] }, 'eventTypes'],
      [{ url: 'https://hooks.example/in', eventTypes: ['ticket.created', 'doors.kicked'] }, 'eventTypes[1]', /^must be one of: ticket\.created, ticket\.revoked, /],
      [{ url: 'https://hooks.example/in', eventTypes: ['ticket.created', 'ticket.created'] }, 'eventTypes'],
      [{ url: 'https://hooks.example/in', eventTypes: ['*'] }, 'eventTypes[0]'],
      [{ url: 'https://hooks.example/in', eventTypes: 'ticket.created' }, 'eventTypes'],
      [{ eventTypes: ['ticket.created'] }, 'url'],
      [{ url: `https://hooks.example/${'a'.repeat(2048)}`, eventTypes: ['ticket.created'] }, 'url'],
      [{ url: 'https://hooks.example/in', eventTypes: ['ticket.created'], description: 'x'.repeat(501) }, 'description'],
      [{ url: 'https://hooks.example/in', eventTypes: ['ticket.created'], secret: 'whsec_mine' }, 'secret', /not a known field/],
    ];
    for (const [body, field, message] of cases) {
      const response = await create(body);
      const problem = expectProblem(response, 400);
      expect(problem.errors!.map((error) => error.field), JSON.stringify(body)).toContain(field);
      if (message) expect(problem.errors!.find((error) => error.field === field)!.message).toMatch(message);
    }
    for (const [body, field] of [
      [{ eventTypes: [] }, 'eventTypes'],
      [{ eventTypes: ['nope'] }, 'eventTypes[0]'],
      [{ enabled: 'yes' }, 'enabled'],
      [{ enabled: true, id: hook.id }, 'id'],
      [{ description: null }, 'description'],
    ] as [object, string][]) {
      expect(expectProblem(await patch(hook.id, body), 400).errors!.map((error) => error.field)).toContain(field);
    }
    expect(await state()).toBe(before);
  });

  it('needs a token (401) with the webhooks:manage scope (403) on every route', async () => {
    const hook = await subscribe();
    const reader = await clientToken(t.app, await createClient(t.app, acme, ['events:read', 'audit:read', 'clients:manage']));
    const scope = 'webhooks:manage';
    await expectAuthChecks(t, reader, [
      { scope, method: 'POST', url: '/operatorapi/webhooks', payload: { url: 'https://hooks.example/in', eventTypes: ['ticket.created'] } },
      { scope, method: 'GET', url: '/operatorapi/webhooks' },
      { scope, method: 'GET', url: `/operatorapi/webhooks/${hook.id}` },
      { scope, method: 'PATCH', url: `/operatorapi/webhooks/${hook.id}`, payload: { enabled: false } },
      { scope, method: 'DELETE', url: `/operatorapi/webhooks/${hook.id}` },
      { scope, method: 'POST', url: `/operatorapi/webhooks/${hook.id}/secret` },
    ]);
    expect((await row(hook.id))!.enabled).toBe(true);
  });

  it("answers another tenant's subscription, and ids that are no UUID, as missing (404) and changes nothing", async () => {
    const hook = await subscribe();
    const before = await state();
    for (const id of [hook.id, 'not-a-uuid', '00000000-0000-4000-8000-000000000000']) {
      const auth = id === hook.id ? otherToken : token;
      for (const request of [
        { method: 'GET' as const, url: `/operatorapi/webhooks/${id}` },
        { method: 'PATCH' as const, url: `/operatorapi/webhooks/${id}`, payload: { url: 'https://127.0.0.1/', enabled: false } },
        { method: 'PATCH' as const, url: `/operatorapi/webhooks/${id}`, payload: { enabled: false } },
        { method: 'POST' as const, url: `/operatorapi/webhooks/${id}/secret` },
        { method: 'DELETE' as const, url: `/operatorapi/webhooks/${id}` },
      ]) {
        const response = await call(t, auth, request);
        expect(expectProblem(response, 404).type).toContain('not-found');
        expect(response.body).not.toContain(hook.secret);
      }
    }
    expect(await state()).toBe(before);
  });

  it('keeps a tenant to 50 subscriptions, with a clear 409', async () => {
    const tenant = await createTenant(t.app, 'many');
    const many = await clientToken(t.app, tenant);
    for (let i = 0; i < 50; i++) {
      const response = await create({ url: `https://93.184.215.14/hook/${i}`, eventTypes: ['ticket.created'] }, many);
      expect(response.statusCode, response.body).toBe(201);
    }
    const before = await state();
    const refused = await create({ url: 'https://93.184.215.14/hook/50', eventTypes: ['ticket.created'] }, many);
    expect(expectProblem(refused, 409).detail).toMatch(/at most 50 webhook subscriptions/);
    expect(refused.body).not.toContain('whsec_');
    expect(await state()).toBe(before);
    // Other tenants are not counted.
    await subscribe();
  });

  it('lets only one of several concurrent creations take the last place', async () => {
    const tenant = await createTenant(t.app, 'racing');
    const racing = await clientToken(t.app, tenant);
    for (let i = 0; i < 49; i++) {
      expect((await create({ url: `https://93.184.215.14/race/${i}`, eventTypes: ['ticket.created'] }, racing)).statusCode).toBe(201);
    }
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => create({ url: `https://93.184.215.14/race/last-${i}`, eventTypes: ['ticket.created'] }, racing)),
    );
    expect(answers.map((answer) => answer.statusCode).sort()).toEqual([201, 409, 409, 409, 409, 409]);
    const { rows } = await t.database.db.query<{ n: number; events: number }>(
      `SELECT (SELECT count(*)::int FROM webhooks WHERE tenant_id = $1) AS n,
              (SELECT count(*)::int FROM audit_events WHERE tenant_id = $1 AND action = 'webhook.created') AS events`,
      [tenant.tenantId],
    );
    expect(rows[0]).toEqual({ n: 50, events: 50 });
  });
});

describe('webhook subscriptions with WEBHOOK_ALLOW_INSECURE=true', () => {
  let t: TestApp;
  let token: string;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4', WEBHOOK_ALLOW_INSECURE: 'true' }, { resolveHost });
    const tenant = await createTenant(t.app, 'dev');
    token = await clientToken(t.app, tenant);
  });
  afterAll(async () => {
    await t.close();
  });

  const create = (url: string) => call(t, token, { method: 'POST', url: '/operatorapi/webhooks', payload: { url, eventTypes: ['ticket.created'] } });

  it('allows http and loopback or private addresses for development', async () => {
    for (const url of ['http://127.0.0.1:8080/in', 'http://[::1]:8080/in', 'https://10.0.0.8/in', 'http://internal.example/in']) {
      const response = await create(url);
      expect(response.statusCode, `${url}: ${response.body}`).toBe(201);
      expect(response.json().url).toBe(url);
    }
  });

  it('still refuses link-local and cloud-metadata addresses, at create and PATCH', async () => {
    const hook = (await create('http://127.0.0.1:9000/in')).json();
    const { rows: before } = await t.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_events');
    for (const url of [
      'http://169.254.169.254/latest/meta-data',
      'http://169.254.10.1/in',
      'http://[fe80::1]/in',
      'http://100.100.100.200/in',
      'http://[::ffff:169.254.169.254]/in',
      'http://metadata.example/in',
    ]) {
      for (const response of [
        await create(url),
        await call(t, token, { method: 'PATCH', url: `/operatorapi/webhooks/${hook.id}`, payload: { url } }),
      ]) {
        const problem = expectProblem(response, 422);
        expect(problem.errors, url).toEqual([{ field: 'url', message: expect.stringMatching(/never allowed/) }]);
      }
      expectProblem(await create(url.replace('http:', 'ftp:')), 422);
    }
    const { rows: after } = await t.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_events');
    expect(after[0]!.n).toBe(before[0]!.n);
    expect((await call(t, token, { method: 'GET', url: `/operatorapi/webhooks/${hook.id}` })).json().url).toBe('http://127.0.0.1:9000/in');
  });
});
