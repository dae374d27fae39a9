// Changing SECRETS_KEY (README, "SECRETS_KEY"): with the old key in SECRETS_KEY_PREVIOUS every sealed value still
// opens; `acs secrets-key reencrypt` seals them all again under the new key, after which the old key can go.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../../src/app.js';
import type { Database } from '../../src/db/database.js';
import { SEALED_KINDS, listSealedValues, replaceSealedValues, type SealedKind } from '../../src/db/repositories/sealed-values.repo.js';
import { createLogger } from '../../src/logger.js';
import { seal, secretsKeyOf, unseal, type SecretsKey } from '../../src/shared/crypto.js';
import { SEALED_AAD } from '../../src/services/keys/sealed-values.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { download, phoneToken } from '../helpers/device.js';
import { clientToken, createTenant } from '../helpers/oauth.js';
import { ticket } from '../helpers/operator.js';
import { twoTenants } from '../helpers/tenants.js';
import { insertWebhook, rotateWebhookSecret } from '../helpers/webhooks.js';

const aadOf = (kind: SealedKind, key: string[]) =>
  kind === 'signingKey' ? SEALED_AAD.signingKey(key[0]!) : kind === 'credential' ? SEALED_AAD.credential(key[0]!, key[1]!) : SEALED_AAD.webhookSecret(key[0]!, key[1]!);

/** Every sealed value in the database, by kind. */
async function allSealed(db: Database): Promise<{ kind: SealedKind; key: string[]; sealed: Buffer }[]> {
  const all: { kind: SealedKind; key: string[]; sealed: Buffer }[] = [];
  for (const kind of SEALED_KINDS) {
    let after: string[] | null = null;
    for (;;) {
      const page = await listSealedValues(db, kind, after, 2);
      if (page.length === 0) break;
      all.push(...page.map((value) => ({ kind, ...value })));
      after = page[page.length - 1]!.key;
    }
  }
  return all;
}

const opensUnder = (key: SecretsKey, value: { kind: SealedKind; key: string[]; sealed: Buffer }) => {
  try {
    unseal(key, value.sealed, aadOf(value.kind, value.key));
    return true;
  } catch {
    return false;
  }
};

describe('changing SECRETS_KEY', () => {
  let t: TestApp;
  let oldKey: SecretsKey;
  const newKey = randomBytes(32);
  const apps: App[] = [];
  let acmeId: string;
  let credentialBefore: string;
  let phone: string;

  /** Another server on the test's database with other keys; the database stays the test app's to close. */
  async function serverWith(key: SecretsKey): Promise<App> {
    const db = Object.assign(Object.create(t.database.db) as Database, { close: async () => undefined });
    const app = await buildApp(t.config, { db, log: createLogger('silent'), secretsKey: key });
    apps.push(app);
    return app;
  }

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' });
    oldKey = t.secretsKey;
    const { acme, token } = await twoTenants(t, { acme: { locks: ['door', 'gate'], devices: ['phone'] }, other: { locks: ['their-door'], devices: ['their-phone'] } });
    acmeId = acme.tenantId;
    // Sealed under the old key: the access-token key and acme's ticket key, three credentials, two webhook secrets
    // (one rotated, so that its previous secret is sealed too).
    await ticket(t, token, 'door', 'phone');
    await ticket(t, token, 'gate', 'phone');
    await ticket(t, token, 'door', 'phone');
    phone = await phoneToken(t, acme, 'phone');
    credentialBefore = (await download(t, phone, 'phone'))[0]!.credential;
    const hook = await insertWebhook(t.database.db, oldKey, acmeId, 'https://hooks.example/a', ['ticket.created']);
    await insertWebhook(t.database.db, oldKey, acmeId, 'https://hooks.example/b', ['ticket.created']);
    await rotateWebhookSecret(t.database.db, oldKey, acmeId, hook.id, Date.now() + 86_400_000);
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await t.close();
  });

  it('seals every value again under the new key: the old key then opens none, the new one all', async () => {
    const before = await allSealed(t.database.db);
    expect(new Set(before.map((value) => value.kind))).toEqual(new Set(SEALED_KINDS));
    expect(before.every((value) => opensUnder(oldKey, value))).toBe(true);

    const rotating = await serverWith(secretsKeyOf(newKey, [oldKey.current]));
    const report = await rotating.services.secretsKey.reencrypt();
    expect(report.unopenable).toEqual([]);
    expect(report.stillChanging).toBe(0);
    for (const kind of SEALED_KINDS) {
      expect(report.resealed[kind], kind).toBe(before.filter((value) => value.kind === kind).length);
    }

    const after = await allSealed(t.database.db);
    expect(after.map((value) => `${value.kind}:${value.key.join('/')}`).sort()).toEqual(before.map((value) => `${value.kind}:${value.key.join('/')}`).sort());
    expect(after.filter((value) => opensUnder(secretsKeyOf(newKey), value))).toHaveLength(after.length);
    expect(after.filter((value) => opensUnder(secretsKeyOf(oldKey.current), value))).toEqual([]);
    // The same plaintexts, only sealed anew.
    for (const value of after) {
      const was = before.find((old) => old.kind === value.kind && old.key.join('/') === value.key.join('/'))!;
      expect(unseal(secretsKeyOf(newKey), value.sealed, aadOf(value.kind, value.key))).toBe(unseal(oldKey, was.sealed, aadOf(was.kind, was.key)));
    }
  });

  it('is idempotent: a second run finds everything current', async () => {
    const rotating = await serverWith(secretsKeyOf(newKey, [oldKey.current]));
    const report = await rotating.services.secretsKey.reencrypt();
    expect(Object.values(report.resealed).every((count) => count === 0)).toBe(true);
    expect(report.alreadyCurrent).toBe((await allSealed(t.database.db)).length);
  });

  it('leaves a server with only the new key working: tokens are signed, the phone gets the credential it holds', async () => {
    const server = await serverWith(secretsKeyOf(newKey));
    // The access-token key opens: a token is signed, and accepted.
    const token = await clientToken(server, await createTenant(server, 'after-rotation'));
    const listed = await server.inject({ url: '/operatorapi/securedobjects', headers: { authorization: `Bearer ${token}` } });
    expect(listed.statusCode, listed.body).toBe(200);
    const response = await server.inject({
      url: '/deviceapi/mobiledevices/phone/tickets',
      headers: { authorization: `Bearer ${phone}` },
    });
    expect(response.statusCode, response.body).toBe(200);
    // The stored credential opened under the new key and is handed out unchanged (not signed anew).
    expect((response.json() as { credential: string }[]).map((item) => item.credential)).toContain(credentialBefore);
  });

  it('lists a value no given key opens and leaves it as it is, and exits unfinished', async () => {
    const stranger = secretsKeyOf(randomBytes(32));
    const hook = await insertWebhook(t.database.db, stranger, acmeId, 'https://hooks.example/c', ['ticket.created']);
    const rotating = await serverWith(secretsKeyOf(newKey, [oldKey.current]));
    const report = await rotating.services.secretsKey.reencrypt();
    expect(report.unopenable).toEqual([{ kind: 'webhookSecret', key: [acmeId, hook.id] }]);
    const stored = (await allSealed(t.database.db)).find((value) => value.kind === 'webhookSecret' && value.key[1] === hook.id)!;
    expect(opensUnder(stranger, stored)).toBe(true);
    await t.database.db.query('DELETE FROM webhooks WHERE tenant_id = $1 AND id = $2', [acmeId, hook.id]);
  });

  it('never overwrites a value that changed after it was read (a secret rotated meanwhile keeps its new seal)', async () => {
    const [value] = (await allSealed(t.database.db)).filter((item) => item.kind === 'webhookSecret');
    const changedMeanwhile = seal(secretsKeyOf(newKey), 'whsec_changed', aadOf('webhookSecret', value!.key));
    await t.database.db.query('UPDATE webhooks SET secret_sealed = $3 WHERE tenant_id = $1 AND id = $2', [...value!.key, changedMeanwhile]);
    const replaced = await replaceSealedValues(t.database.db, 'webhookSecret', [
      { key: value!.key, was: value!.sealed, now: seal(secretsKeyOf(newKey), 'whsec_stale', aadOf('webhookSecret', value!.key)) },
    ]);
    expect(replaced).toBe(0);
    const stored = (await allSealed(t.database.db)).find((item) => item.kind === 'webhookSecret' && item.key.join('/') === value!.key.join('/'))!;
    expect(unseal(secretsKeyOf(newKey), stored.sealed, aadOf('webhookSecret', stored.key))).toBe('whsec_changed');
  });
});
