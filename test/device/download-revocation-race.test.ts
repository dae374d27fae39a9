// A download racing a revocation (docs/api-reference.md 8.2): sync sends revocations only of tickets with a credential, so a
// credential stored after the revocation passed the lock would be a door key the lock never learns is revoked.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { download, lockToken, phoneToken, sync, syncAll } from '../helpers/device.js';
import { clientToken, createTenant, type TenantFixture } from '../helpers/oauth.js';
import { call, device, lock, ticket } from '../helpers/operator.js';

describe('download racing a revocation', () => {
  let now = Date.UTC(2026, 0, 15, 9, 0, 0, 0);
  let t: TestApp;
  let acme: TenantFixture;
  let operator: string;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' }, { clock: () => now });
    acme = await createTenant(t.app, 'acme');
    operator = await clientToken(t.app, acme);
    await lock(t, operator, 'door');
    await device(t, operator, 'phone');
    await device(t, operator, 'other');
  });
  afterAll(async () => {
    await t.close();
  });

  it('hands out no credential of a ticket revoked while the download signed it, so every credential handed out has its revocation reach the lock', async () => {
    const x = await ticket(t, operator, 'door', 'phone');
    const lockTok = await lockToken(t, acme, 'door');
    const c0 = (await syncAll(t, lockTok, 'door')).cursor;
    const phoneTok = await phoneToken(t, acme, 'phone');

    const db = t.database.db;
    const query = db.query;
    const transaction = db.transaction;
    let read = false;
    let c1: string | undefined;
    // The download reads the device's tickets (with their locks' zones), signs them, then stores them in a transaction.
    db.query = (async (text: string, params?: readonly unknown[]) => {
      if (text.includes('AS lock_time_zone')) read = true;
      return query.call(db, text, params);
    }) as typeof query;
    db.transaction = (async (work: Parameters<typeof transaction>[0]) => {
      if (read && c1 === undefined) {
        c1 = 'pending';
        // The download has read X as valid and signed it; before it stores that, X is revoked, another ticket is
        // issued for the lock, and the lock syncs.
        expect((await call(t, operator, { method: 'DELETE', url: `/operatorapi/tickets/${x.id}` })).statusCode).toBe(200);
        now += 1;
        await ticket(t, operator, 'door', 'other');
        const between = await sync(t, lockTok, 'door', c0);
        expect(between.revocations).toEqual([]);
        c1 = between.cursor;
      }
      return transaction.call(db, work);
    }) as typeof transaction;
    let handed;
    try {
      handed = await download(t, phoneTok, 'phone');
    } finally {
      db.query = query;
      db.transaction = transaction;
    }
    expect(c1).not.toBe('pending');
    expect(c1).toBeDefined();
    // X was revoked before the download stored its credential: the phone is not handed it, and nothing is stored.
    expect(handed.map((item) => item.id)).toEqual([]);
    const { rows } = await db.query<{ credential_encrypted: unknown; credential_expires_at: unknown; downloaded_at: unknown }>(
      'SELECT credential_encrypted, credential_expires_at, downloaded_at FROM tickets WHERE id = $1',
      [x.id],
    );
    expect(rows[0]).toEqual({ credential_encrypted: null, credential_expires_at: null, downloaded_at: null });
    const after = await syncAll(t, lockTok, 'door', c1);
    expect(after.revokedIds).toEqual([]);

    // The other order: a download that stored first, then the revocation: the lock's next sync carries it.
    now += 1;
    const y = await ticket(t, await clientToken(t.app, acme), 'door', 'phone');
    expect((await download(t, phoneTok, 'phone')).map((item) => item.id)).toEqual([y.id]);
    expect((await call(t, await clientToken(t.app, acme), { method: 'DELETE', url: `/operatorapi/tickets/${y.id}` })).statusCode).toBe(200);
    expect((await syncAll(t, lockTok, 'door', after.cursor)).revokedIds).toEqual([y.id]);
  });
});
