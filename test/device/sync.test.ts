// GET /deviceapi/securedobjects/{id}/sync (docs/api-reference.md 6.2, 8.1, 8.2): everything current without a cursor, only what
// changed after one, the serial and the key set, only the revocations a lock still needs, pages that yield each
// change once, bad cursors, and every ticket write path reaching the lock.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { accessToken, deviceTicketRows, download, lockTrust, payloadOf, phoneToken, sync, syncAll, syncRequest, type SyncBody } from '../helpers/device.js';
import { bearer, clientToken, createClient, createTenant, type TenantFixture } from '../helpers/oauth.js';
import { HOUR, call, device, expectProblem, fieldsOf, lock, nextLink, ticket } from '../helpers/operator.js';

const MINUTE = 60_000;
const DAY = 24 * HOUR;

describe('GET /deviceapi/securedobjects/{id}/sync', () => {
  let now = Date.UTC(2026, 4, 20, 7, 0, 0, 0);
  let t: TestApp;
  let acme: TenantFixture;
  let operator: string;
  /** An unbound client with scope sync: it may sync every lock of acme. */
  let syncToken: string;
  /** An Access API user who manages residents, lock groups and permissions. */
  let manager: string;

  /** Issues a ticket, then moves the clock a millisecond. */
  async function issue(securedObjectId: string, mobileDeviceId: string, overrides: object = {}) {
    const made = await ticket(t, operator, securedObjectId, mobileDeviceId, overrides);
    now += 1;
    return made;
  }

  async function revoke(id: string): Promise<{ revocationDate: number }> {
    const response = await call(t, operator, { method: 'DELETE', url: `/operatorapi/tickets/${id}` });
    expect(response.statusCode, response.body).toBe(200);
    return response.json();
  }

  /**
   * The device downloads its tickets, so a credential of each exists: from now on its lock needs their revocations
   * (docs/api-reference.md 8.2). Answers the ids downloaded.
   */
  async function downloadAll(mobileDeviceId: string): Promise<string[]> {
    return (await download(t, await phoneToken(t, acme, mobileDeviceId), mobileDeviceId)).map((item) => item.id);
  }

  async function operatorView(id: string): Promise<Record<string, unknown>> {
    const response = await call(t, operator, { method: 'GET', url: `/operatorapi/tickets/${id}` });
    expect(response.statusCode, response.body).toBe(200);
    return response.json();
  }

  async function v1(method: 'POST' | 'PUT' | 'DELETE', url: string, payload?: object) {
    const response = await t.app.inject({ method, url, headers: bearer(manager), ...(payload ? { payload } : {}) });
    expect(response.statusCode, `${method} ${url}: ${response.body}`).toBeLessThan(300);
    return response.statusCode === 204 ? null : response.json();
  }

  function grant(residentId: string, lockGroupId: string) {
    return v1('POST', '/v1/access-permissions', { residentId, lockGroupId, beginDate: now, endDate: now + DAY, commands: ['open'], channels: ['btlespp'] });
  }

  /** Ticket ids from the database, sorted. */
  async function ticketIds(where: { lock?: string; device?: string; permission?: string; revoked?: boolean }): Promise<string[]> {
    const { rows } = await t.database.db.query<{ id: string }>(
      `SELECT id FROM tickets WHERE tenant_id = $1 AND ($2::text IS NULL OR secured_object_id = $2) AND ($3::text IS NULL OR mobile_device_id = $3)
          AND ($4::uuid IS NULL OR access_permission_id = $4) AND ($5::boolean IS NULL OR (revoked_at IS NOT NULL) = $5) ORDER BY id`,
      [acme.tenantId, where.lock ?? null, where.device ?? null, where.permission ?? null, where.revoked ?? null],
    );
    return rows.map((row) => row.id);
  }

  /** Where each lock's last sync ended, so `changes` answers only what a step changed. */
  const cursors = new Map<string, string>();

  /** Syncs the lock from its last cursor to the end; answers the token and revocation ids that changed, sorted. */
  async function changes(lockId: string): Promise<{ tokens: string[]; revocations: string[] }> {
    const walked = await syncAll(t, syncToken, lockId, cursors.get(lockId));
    cursors.set(lockId, walked.cursor);
    return { tokens: [...walked.tokenIds].sort(), revocations: [...walked.revokedIds].sort() };
  }

  async function locks(...ids: string[]): Promise<void> {
    for (const id of ids) {
      await lock(t, operator, id);
      await changes(id);
    }
  }

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' }, { clock: () => now });
    acme = await createTenant(t.app, 'acme');
    operator = await clientToken(t.app, acme);
    syncToken = await clientToken(t.app, await createClient(t.app, acme, ['sync']));
    manager = await accessToken(t, acme, ['device-groups:write', 'access-permissions:write']);
  });
  afterAll(async () => {
    await t.close();
  });

  it('without a cursor answers every current valid ticket, the revocations the lock still needs, its serial and the tenant\'s key set', async () => {
    await lock(t, operator, 'l-current');
    await lock(t, operator, 'l-elsewhere');
    await device(t, operator, 'p-current');
    await device(t, operator, 'p-other');
    const valid = await issue('l-current', 'p-current', { endDate: now + DAY });
    const future = await issue('l-current', 'p-other', { beginDate: now + DAY, endDate: now + 2 * DAY, commands: ['open', 'clos'] });
    const revoked = await issue('l-current', 'p-current');
    const revokedExpiring = await issue('l-current', 'p-current', { endDate: now + MINUTE });
    const neverDownloaded = await issue('l-current', 'p-other');
    await issue('l-current', 'p-other', { endDate: now + MINUTE });
    await issue('l-elsewhere', 'p-current');
    // The phone holds credentials of its tickets; p-other never downloads.
    expect(await downloadAll('p-current')).toHaveLength(4);
    const { revocationDate } = await revoke(revoked.id);
    await revoke(revokedExpiring.id);
    await revoke(neverDownloaded.id);
    now += 2 * MINUTE;

    const response = await syncRequest(t, syncToken, 'l-current');
    expect(response.statusCode, response.body).toBe(200);
    expect(response.headers['content-type']).toContain('application/json');
    expect(response.headers.link).toBeUndefined();
    const body = response.json() as SyncBody;
    expect(Object.keys(body).sort()).toEqual(['cursor', 'holderBinding', 'keys', 'lockState', 'revocations', 'revokedKeys', 'serial', 'tokens']);
    // docs/api-reference.md 15: a full sync carries the lock's signed state; no lockdown ever reached it: normal, serial 0.
    expect(payloadOf(body.lockState!)).toMatchObject({ aud: 'l-current', serial: 0, mode: 'normal' });
    // The lock's tickets as the Operator API shows them, in the order they changed; no credentials.
    expect(body.tokens).toEqual([await operatorView(valid.id), await operatorView(future.id)]);
    // docs/api-reference.md 8.2: a revocation only while a credential of it may be valid. The expired ticket's credential
    // ended with it; the ticket never downloaded has none.
    expect(body.revocations).toEqual([{ tokenId: revoked.id, revocationDate }]);
    expect(body.cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    // The position of the last change answered: the revocation of `revoked`.
    expect(body.serial).toBe((await deviceTicketRows(t, acme.tenantId, [revoked.id]))[0]!.change_seq);
    // docs/api-reference.md 8.1: a full sync carries the tenant's key set, the one the lock's trust endpoint answers.
    expect(body.keys).toEqual((await lockTrust(t, acme, 'l-current')).keys);
    expect(body.keys!.keys.length).toBeGreaterThanOrEqual(1);
  });

  it('with the cursor answers only what changed after it; nothing changed answers empty arrays, the same cursor and serial, and no keys', async () => {
    await lock(t, operator, 'l-delta');
    await lock(t, operator, 'l-delta-other');
    await device(t, operator, 'p-delta');
    const first = await issue('l-delta', 'p-delta');
    const start = await sync(t, syncToken, 'l-delta');
    expect(start.tokens.map((item) => item.id)).toEqual([first.id]);
    expect(start.keys).toBeDefined();
    const c0 = start.cursor;
    // Nothing changed, the key set included: no `keys` (docs/api-reference.md 8.1) and the same serial.
    expect(await sync(t, syncToken, 'l-delta', c0)).toEqual({ tokens: [], revocations: [], cursor: c0, serial: start.serial, holderBinding: 'optional', revokedKeys: [] });

    const added = await issue('l-delta', 'p-delta');
    const afterAdd = await sync(t, syncToken, 'l-delta', c0);
    expect(afterAdd.tokens).toEqual([await operatorView(added.id)]);
    expect(afterAdd.revocations).toEqual([]);
    expect(afterAdd.cursor).not.toBe(c0);
    expect(afterAdd.serial).toBeGreaterThan(start.serial);
    expect(afterAdd).not.toHaveProperty('keys');

    // The phone downloads: the lock needs the revocations of what it holds (docs/api-reference.md 8.2).
    expect(await downloadAll('p-delta')).toEqual([first.id, added.id]);
    const { revocationDate } = await revoke(first.id);
    const afterRevoke = await sync(t, syncToken, 'l-delta', afterAdd.cursor);
    expect(afterRevoke).toEqual({ tokens: [], revocations: [{ tokenId: first.id, revocationDate }], cursor: expect.any(String), serial: expect.any(Number), holderBinding: 'optional', revokedKeys: [] });
    expect(afterRevoke.serial).toBeGreaterThan(afterAdd.serial);

    // Another lock's ticket is not this lock's change.
    await issue('l-delta-other', 'p-delta');
    expect(await sync(t, syncToken, 'l-delta', afterRevoke.cursor)).toEqual({ tokens: [], revocations: [], cursor: afterRevoke.cursor, serial: afterRevoke.serial, holderBinding: 'optional', revokedKeys: [] });

    // Issued, downloaded and revoked between two syncs: the lock learns only the revocation.
    const brief = await issue('l-delta', 'p-delta');
    await downloadAll('p-delta');
    const briefRevocation = await revoke(brief.id);
    const afterBrief = await sync(t, syncToken, 'l-delta', afterRevoke.cursor);
    expect(afterBrief.tokens).toEqual([]);
    expect(afterBrief.revocations).toEqual([{ tokenId: brief.id, revocationDate: briefRevocation.revocationDate }]);
    expect(await sync(t, syncToken, 'l-delta', afterBrief.cursor)).toEqual({ tokens: [], revocations: [], cursor: afterBrief.cursor, serial: afterBrief.serial, holderBinding: 'optional', revokedKeys: [] });

    // Issued and revoked between two syncs, never downloaded: no credential of it exists, so the lock learns nothing
    // of it, neither the ticket nor its revocation (docs/api-reference.md 8.2).
    const unused = await issue('l-delta', 'p-delta');
    await revoke(unused.id);
    expect(await sync(t, syncToken, 'l-delta', afterBrief.cursor)).toEqual({ tokens: [], revocations: [], cursor: afterBrief.cursor, serial: afterBrief.serial, holderBinding: 'optional', revokedKeys: [] });

    // Starting over gives the whole current state, with the key set.
    const whole = await sync(t, syncToken, 'l-delta');
    expect(whole.tokens.map((item) => item.id)).toEqual([added.id]);
    expect(whole.revocations.map((item) => item.tokenId)).toEqual([first.id, brief.id]);
    expect(whole.keys).toEqual(start.keys);
  });

  it('answers a lock without tickets empty arrays and the key set, then a cursor and serial that stay the same', async () => {
    await lock(t, operator, 'l-empty');
    const empty = await sync(t, syncToken, 'l-empty');
    // A full sync carries the key set even with nothing else to say: a new lock learns its keys (docs/api-reference.md 8.1).
    expect(empty).toEqual({
      tokens: [],
      revocations: [],
      cursor: expect.any(String),
      serial: expect.any(Number),
      keys: (await lockTrust(t, acme, 'l-empty')).keys,
      lockState: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/),
      holderBinding: 'optional',
      revokedKeys: [],
    });
    const { keys: _keys, lockState: _lockState, ...unchanged } = empty;
    expect(await sync(t, syncToken, 'l-empty', empty.cursor)).toEqual(unchanged);
  });

  it('cuts at limit with Link: rel="next"; walking the pages yields each change exactly once, also past a write mid-walk', async () => {
    await lock(t, operator, 'l-pages');
    const phones = Array.from({ length: 5 }, (_, i) => `p-page-${i}`);
    for (const id of phones) await device(t, operator, id);
    // Five tickets in one transaction share one change number: pages must split inside it.
    const resident = await v1('POST', '/v1/residents', { name: 'Pages', mobileDeviceIds: phones });
    const group = await v1('POST', '/v1/lock-groups', { name: 'Pages', securedObjectIds: ['l-pages'] });
    expect((await grant(resident.id, group.id)).tokenCount).toBe(5);
    const direct = [];
    for (let i = 0; i < 3; i++) direct.push(await issue('l-pages', phones[i]!));
    // Downloaded first, so the lock needs both revocations (docs/api-reference.md 8.2).
    await downloadAll(phones[0]!);
    await downloadAll(phones[1]!);
    await revoke(direct[0]!.id);
    await revoke(direct[1]!.id);

    const first = await syncRequest(t, syncToken, 'l-pages', undefined, 3);
    expect(first.statusCode).toBe(200);
    expect(first.headers.link).toMatch(/^<\/deviceapi\/securedobjects\/l-pages\/sync\?limit=3&cursor=[A-Za-z0-9_-]+>; rel="next"$/);

    const walked = await syncAll(t, syncToken, 'l-pages', undefined, 3);
    expect(walked.pages.map((page) => page.tokens.length + page.revocations.length)).toEqual([3, 3, 2]);
    expect([...walked.tokenIds].sort()).toEqual(await ticketIds({ lock: 'l-pages', revoked: false }));
    expect(new Set(walked.tokenIds).size).toBe(walked.tokenIds.length);
    expect([...walked.revokedIds].sort()).toEqual([direct[0]!.id, direct[1]!.id].sort());
    // A page cut inside a change number has not reached it yet: serials never go back, and the last is the lock's.
    const serials = walked.pages.map((page) => page.serial);
    expect([...serials].sort((a, b) => a - b)).toEqual(serials);
    const lastSerial = serials[serials.length - 1]!;
    expect(lastSerial).toBe(Math.max(...(await deviceTicketRows(t, acme.tenantId)).filter((row) => row.secured_object_id === 'l-pages').map((row) => row.change_seq)));
    expect(await sync(t, syncToken, 'l-pages', walked.cursor)).toEqual({ tokens: [], revocations: [], cursor: walked.cursor, serial: lastSerial, holderBinding: 'optional', revokedKeys: [] });

    // A page that ends exactly at the last change has no next link.
    const exact = await syncAll(t, syncToken, 'l-pages', undefined, 4);
    expect(exact.pages.map((page) => page.tokens.length + page.revocations.length)).toEqual([4, 4]);

    // A write between two pages is answered once, after what was there before.
    const page1 = await syncRequest(t, syncToken, 'l-pages', undefined, 3);
    const late = await issue('l-pages', phones[4]!);
    const rest = await syncAll(t, syncToken, 'l-pages', (page1.json() as SyncBody).cursor, 3);
    const seen = [...(page1.json() as SyncBody).tokens.map((item) => item.id), ...rest.tokenIds];
    expect(seen.filter((id) => id === late.id)).toHaveLength(1);
    expect(seen[seen.length - 1]).toBe(late.id);
    expect([...seen].sort()).toEqual(await ticketIds({ lock: 'l-pages', revoked: false }));
    expect(nextLink(page1)).toBeDefined();
  });

  it('answers 400 for a cursor it did not issue and for a bad limit', async () => {
    await lock(t, operator, 'l-bad');
    const zero = '00000000-0000-0000-0000-000000000000';
    const b64 = (text: string) => Buffer.from(text).toString('base64url');
    const downloadCursor = b64(JSON.stringify([now, zero]));
    for (const cursor of ['garbage', b64('x:y'), b64(`-1:${zero}`), b64(`1.5:${zero}`), b64('1:not-a-uuid'), b64(`1:${zero}:x`).slice(0, 3), downloadCursor]) {
      const response = await syncRequest(t, syncToken, 'l-bad', cursor);
      expect(fieldsOf(response), cursor).toEqual(['cursor']);
      expect(expectProblem(response, 400).detail).toContain('cursor');
    }
    for (const query of ['?cursor=', '?limit=0', '?limit=1001', '?limit=ten', '?since=1']) {
      expectProblem(await t.app.inject({ url: `/deviceapi/securedobjects/l-bad/sync${query}`, headers: bearer(syncToken) }), 400);
    }
    // A well-formed cursor beyond every change of the tenant was not issued here either: its serial would make the
    // lock ignore every revocation list a phone brings (docs/api-reference.md 8.3).
    const ahead = b64(`999999:${zero}`);
    expect(expectProblem(await syncRequest(t, syncToken, 'l-bad', ahead), 400).detail).toContain('cursor');
  });

  // Each path's revocations reach the lock once a phone holds a credential of the ticket; a ticket never downloaded
  // needs no revocation at the lock (docs/api-reference.md 8.2), so some phones below never download.
  describe('every ticket write path reaches the lock', () => {
    it('Operator API: create, revoke, removal of a device', async () => {
      await locks('w-op-1', 'w-op-2');
      await device(t, operator, 'wp-op');
      await device(t, operator, 'wp-op-gone');

      const made = await issue('w-op-1', 'wp-op');
      expect(await changes('w-op-1')).toEqual({ tokens: [made.id], revocations: [] });
      expect(await changes('w-op-2')).toEqual({ tokens: [], revocations: [] });

      await downloadAll('wp-op');
      await revoke(made.id);
      expect(await changes('w-op-1')).toEqual({ tokens: [], revocations: [made.id] });

      const one = await issue('w-op-1', 'wp-op-gone');
      const two = await issue('w-op-2', 'wp-op-gone');
      await changes('w-op-1');
      await changes('w-op-2');
      await downloadAll('wp-op-gone');
      // Issued after the phone's download: no credential of it exists.
      const undownloaded = await issue('w-op-2', 'wp-op-gone');
      expect(await changes('w-op-2')).toEqual({ tokens: [undownloaded.id], revocations: [] });
      expect((await call(t, operator, { method: 'DELETE', url: '/operatorapi/mobiledevices/wp-op-gone' })).statusCode).toBe(204);
      expect(await ticketIds({ device: 'wp-op-gone', revoked: true })).toEqual([one.id, two.id, undownloaded.id].sort());
      expect(await changes('w-op-1')).toEqual({ tokens: [], revocations: [one.id] });
      expect(await changes('w-op-2')).toEqual({ tokens: [], revocations: [two.id] });
    });

    it('Access API: permission expansion and permission delete', async () => {
      await locks('w-perm-1', 'w-perm-2');
      for (const id of ['wp-perm-1', 'wp-perm-2']) await device(t, operator, id);
      const resident = await v1('POST', '/v1/residents', { name: 'Perm', mobileDeviceIds: ['wp-perm-1', 'wp-perm-2'] });
      const group = await v1('POST', '/v1/lock-groups', { name: 'Perm', securedObjectIds: ['w-perm-1', 'w-perm-2'] });

      const permission = await grant(resident.id, group.id);
      expect(permission.tokenCount).toBe(4);
      for (const lockId of ['w-perm-1', 'w-perm-2']) {
        const issued = await ticketIds({ lock: lockId, permission: permission.id });
        expect(issued).toHaveLength(2);
        expect(await changes(lockId)).toEqual({ tokens: issued, revocations: [] });
      }

      // Only wp-perm-1 downloads: only its tickets' revocations reach the locks.
      await downloadAll('wp-perm-1');
      await v1('DELETE', `/v1/access-permissions/${permission.id}`);
      for (const lockId of ['w-perm-1', 'w-perm-2']) {
        expect(await ticketIds({ lock: lockId, permission: permission.id, revoked: true })).toHaveLength(2);
        expect(await changes(lockId)).toEqual({ tokens: [], revocations: await ticketIds({ lock: lockId, device: 'wp-perm-1', permission: permission.id, revoked: true }) });
      }
    });

    it('Access API: resident membership add and remove', async () => {
      await locks('w-res-1', 'w-res-2');
      for (const id of ['wp-res-1', 'wp-res-new']) await device(t, operator, id);
      const resident = await v1('POST', '/v1/residents', { name: 'Res', mobileDeviceIds: ['wp-res-1'] });
      const group = await v1('POST', '/v1/lock-groups', { name: 'Res', securedObjectIds: ['w-res-1', 'w-res-2'] });
      await grant(resident.id, group.id);
      await changes('w-res-1');
      await changes('w-res-2');

      await v1('PUT', `/v1/residents/${resident.id}/mobiledevices/wp-res-new`);
      for (const lockId of ['w-res-1', 'w-res-2']) {
        const issued = await ticketIds({ lock: lockId, device: 'wp-res-new' });
        expect(issued).toHaveLength(1);
        expect(await changes(lockId)).toEqual({ tokens: issued, revocations: [] });
      }

      await downloadAll('wp-res-new');
      await v1('DELETE', `/v1/residents/${resident.id}/mobiledevices/wp-res-new`);
      for (const lockId of ['w-res-1', 'w-res-2']) {
        expect(await changes(lockId)).toEqual({ tokens: [], revocations: await ticketIds({ lock: lockId, device: 'wp-res-new', revoked: true }) });
      }
    });

    it('Access API: lock-group membership add and remove', async () => {
      await locks('w-grp-1', 'w-grp-new');
      for (const id of ['wp-grp-1', 'wp-grp-2']) await device(t, operator, id);
      const resident = await v1('POST', '/v1/residents', { name: 'Grp', mobileDeviceIds: ['wp-grp-1', 'wp-grp-2'] });
      const group = await v1('POST', '/v1/lock-groups', { name: 'Grp', securedObjectIds: ['w-grp-1'] });
      await grant(resident.id, group.id);
      await changes('w-grp-1');

      await v1('PUT', `/v1/lock-groups/${group.id}/securedobjects/w-grp-new`);
      const issued = await ticketIds({ lock: 'w-grp-new' });
      expect(issued).toHaveLength(2);
      expect(await changes('w-grp-new')).toEqual({ tokens: issued, revocations: [] });
      expect(await changes('w-grp-1')).toEqual({ tokens: [], revocations: [] });

      // Only wp-grp-1 downloads: only its ticket's revocation reaches the lock.
      await downloadAll('wp-grp-1');
      await v1('DELETE', `/v1/lock-groups/${group.id}/securedobjects/w-grp-new`);
      expect(await ticketIds({ lock: 'w-grp-new', revoked: true })).toEqual(issued);
      expect(await changes('w-grp-new')).toEqual({ tokens: [], revocations: await ticketIds({ lock: 'w-grp-new', device: 'wp-grp-1' }) });
      expect(await changes('w-grp-1')).toEqual({ tokens: [], revocations: [] });
    });

    it('Access API: resident delete and lock-group delete', async () => {
      await locks('w-del-1', 'w-del-2');
      await device(t, operator, 'wp-del');
      const resident = await v1('POST', '/v1/residents', { name: 'Del', mobileDeviceIds: ['wp-del'] });
      const group = await v1('POST', '/v1/lock-groups', { name: 'Del', securedObjectIds: ['w-del-1'] });
      const permission = await grant(resident.id, group.id);
      const [issued] = await ticketIds({ permission: permission.id });
      expect(await changes('w-del-1')).toEqual({ tokens: [issued], revocations: [] });
      await downloadAll('wp-del');
      await v1('DELETE', `/v1/residents/${resident.id}`);
      expect(await changes('w-del-1')).toEqual({ tokens: [], revocations: [issued] });

      const other = await v1('POST', '/v1/residents', { name: 'Del 2', mobileDeviceIds: ['wp-del'] });
      const otherGroup = await v1('POST', '/v1/lock-groups', { name: 'Del 2', securedObjectIds: ['w-del-2'] });
      const second = await grant(other.id, otherGroup.id);
      const [secondTicket] = await ticketIds({ permission: second.id });
      expect(await changes('w-del-2')).toEqual({ tokens: [secondTicket], revocations: [] });
      await downloadAll('wp-del');
      await v1('DELETE', `/v1/lock-groups/${otherGroup.id}`);
      expect(await changes('w-del-2')).toEqual({ tokens: [], revocations: [secondTicket] });
    });
  });
});
