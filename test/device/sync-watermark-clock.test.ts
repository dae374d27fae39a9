// docs/lock-sync.md: an answer from memory is the database's own answer. The database's answer also depends on the
// lock's clock (docs/api-reference.md 8.5): a revocation whose credential expired by the server's clock is left out while
// the lock's clock is not known to run behind, and sent once an access-log upload shows it does. That estimate takes
// no change number, so a remembered "nothing new" must not outlive it.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { recordLockContact } from '../../src/db/repositories/lock-telemetry.repo.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { changeCounter, download, lockToken, phoneToken, sync } from '../helpers/device.js';
import { bearer, clientToken, createTenant, type TenantFixture } from '../helpers/oauth.js';
import { device, HOUR, lock, ticket } from '../helpers/operator.js';
import { PATIENCE_MS } from '../helpers/process.js';

const START = Date.UTC(2026, 2, 2, 8, 0, 0, 0);

describe('lock sync from memory and the lock\'s clock', () => {
  let t: TestApp;
  let now = START;
  let acme: TenantFixture;
  let operator: string;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4', ACCESS_TOKEN_TTL_SECONDS: '86400' }, { clock: () => now });
    acme = await createTenant(t.app, 'acme');
    operator = await clientToken(t.app, acme);
    await vi.waitFor(() => expect(t.app.services.changeWatermarks.phase).toBe('trusted'), { timeout: PATIENCE_MS });
  });
  afterAll(async () => {
    await t.close();
  });

  it('sends a revocation once the lock is known to run behind its credential\'s expiry, after a remembered nothing-new', async () => {
    await lock(t, operator, 'slow');
    await device(t, operator, 'phone-1');
    const issuedAt = now;
    const issued = await ticket(t, operator, 'slow', 'phone-1', { endDate: issuedAt + HOUR });
    await download(t, await phoneToken(t, acme, 'phone-1'), 'phone-1');
    const lockAuth = await lockToken(t, acme, 'slow');
    const full = await sync(t, lockAuth, 'slow');
    expect(full.tokens.map((item) => item.id)).toEqual([issued.id]);
    const revoked = await t.app.inject({ method: 'DELETE', url: `/operatorapi/tickets/${issued.id}`, headers: bearer(operator) });
    expect(revoked.statusCode, revoked.body).toBe(200);

    // A minute past the credential's expiry by the server's clock, the lock's clock not estimated: nothing to send.
    now = issuedAt + HOUR + 60_000;
    const quiet = await sync(t, lockAuth, 'slow', full.cursor);
    expect(quiet.revocations).toEqual([]);
    expect(t.app.services.changeWatermarks.current(acme.tenantId)).toBe(await changeCounter(t, acme.tenantId));
    expect(await sync(t, lockAuth, 'slow', quiet.cursor)).toEqual(quiet);

    // An access-log upload finds the lock two minutes behind: it still accepts the revoked credential.
    await recordLockContact(t.database.db, acme.tenantId, 'slow', { seenAt: now, clockOffsetMs: -120_000 });
    const afterEstimate = await sync(t, lockAuth, 'slow', quiet.cursor);
    expect(afterEstimate.revocations.map((item) => item.tokenId)).toEqual([issued.id]);
  });
});
