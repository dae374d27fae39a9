// GET /operatorapi/accesslog (docs/api-reference.md 8.5, 7.3): the tenant's access-log entries in lock-time order, every filter,
// keyset pages, entries of a lock registered twice kept apart, another tenant's entries never visible, and auth.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { lockToken, phoneToken } from '../helpers/device.js';
import { bearer, clientToken, createClient } from '../helpers/oauth.js';
import { call, expectAuthChecks, expectProblem, lock, nextLink, ticket, walk } from '../helpers/operator.js';
import { twoTenants, type TwoTenants } from '../helpers/tenants.js';

const START = Date.UTC(2026, 2, 1, 8, 0, 0, 0);
const T = START - 3_600_000;

interface Entry {
  securedObjectId: string;
  entryNo: number;
  lockTime: number;
  tokenId?: string;
  mobileDeviceId?: string;
  command: string;
  channel: string;
  result: 'granted' | 'denied';
  reason?: string;
  receivedTime: number;
  via: string;
  signed: boolean;
  clockOffset?: number;
}

describe('GET /operatorapi/accesslog', () => {
  let t: TestApp;
  let now = START;
  let tenants: TwoTenants;
  let auditor: string;
  let phoneTicket: string;
  let otherPhoneTicket: string;

  const upload = async (token: string, url: string, payload: object) => {
    const response = await t.app.inject({ method: 'POST', url, headers: bearer(token), payload });
    expect(response.statusCode, response.body).toBe(200);
  };
  const list = async (query = '', token = auditor): Promise<Entry[]> => {
    const response = await call(t, token, { method: 'GET', url: `/operatorapi/accesslog${query}` });
    expect(response.statusCode, response.body).toBe(200);
    return response.json();
  };
  const keys = (entries: Entry[]) => entries.map((entry) => `${entry.securedObjectId}#${entry.entryNo}`);

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' }, { clock: () => now });
    tenants = await twoTenants(t, {
      acme: { locks: ['door', 'back', 'porch'], devices: ['phone', 'other-phone'] },
      other: { locks: ['door'], devices: ['phone'] },
    });
    const { acme, other, token, otherToken } = tenants;
    auditor = await clientToken(t.app, await createClient(t.app, acme, ['audit:read']));
    phoneTicket = (await ticket(t, token, 'door', 'phone')).id;
    otherPhoneTicket = (await ticket(t, token, 'back', 'other-phone')).id;
    const othersTicket = (await ticket(t, otherToken, 'door', 'phone')).id;

    // door, directly, its clock 45 s ahead: entries 1..4 at T, T+10, T+20, T+30.
    await upload(await lockToken(t, acme, 'door'), '/deviceapi/securedobjects/door/accesslog', {
      lockTime: now + 45_000,
      entries: [
        { entryNo: 1, lockTime: T, tokenId: phoneTicket, command: 'open', channel: 'btlespp', result: 'granted', reason: 'valid' },
        { entryNo: 2, lockTime: T + 10, tokenId: phoneTicket, command: 'clos', channel: 'btlespp', result: 'denied', reason: 'command not permitted' },
        { entryNo: 3, lockTime: T + 20, command: 'open', channel: 'btlespp', result: 'denied', reason: 'malformed credential' },
        { entryNo: 4, lockTime: T + 30, tokenId: othersTicket, command: 'open', channel: 'btlespp', result: 'denied', reason: 'wrong issuer' },
      ],
    });
    // back, relayed by other-phone without a clock: entries at the same instants as door's, to order by lock on ties.
    now += 1000;
    await upload(await phoneToken(t, acme, 'other-phone'), '/deviceapi/mobiledevices/other-phone/accesslog', {
      securedObjectId: 'back',
      entries: [
        { entryNo: 7, lockTime: T + 10, tokenId: otherPhoneTicket, command: 'open', channel: 'btlespp', result: 'granted' },
        { entryNo: 8, lockTime: T + 20, tokenId: otherPhoneTicket, command: 'open', channel: 'btlespp', result: 'granted' },
      ],
    });
    // The other tenant's lock of the same id, with the same ticket ids as tokenIds: never shown to acme.
    await upload(await lockToken(t, other, 'door'), '/deviceapi/securedobjects/door/accesslog', {
      entries: [
        { entryNo: 1, lockTime: T, tokenId: phoneTicket, command: 'open', channel: 'btlespp', result: 'denied', reason: 'wrong issuer' },
        { entryNo: 2, lockTime: T + 15, tokenId: othersTicket, command: 'open', channel: 'btlespp', result: 'granted' },
      ],
    });
  });
  afterAll(async () => {
    await t.close();
  });

  it('answers the tenant\'s entries by lock time, then lock, then entryNo, with every field', async () => {
    const entries = await list();
    expect(keys(entries)).toEqual(['door#1', 'back#7', 'door#2', 'back#8', 'door#3', 'door#4']);
    expect(entries[0]).toEqual({
      securedObjectId: 'door',
      entryNo: 1,
      lockTime: T,
      tokenId: phoneTicket,
      mobileDeviceId: 'phone',
      command: 'open',
      channel: 'btlespp',
      result: 'granted',
      reason: 'valid',
      receivedTime: START,
      via: 'lock',
      signed: true,
      clockOffset: 45_000,
    });
    // A relayed entry (a phone's report, unsigned) without a clock estimate and without a reason: those fields are
    // absent, never null.
    expect(entries[1]).toEqual({
      securedObjectId: 'back',
      entryNo: 7,
      lockTime: T + 10,
      tokenId: otherPhoneTicket,
      mobileDeviceId: 'other-phone',
      command: 'open',
      channel: 'btlespp',
      result: 'granted',
      receivedTime: START + 1000,
      via: 'other-phone',
      signed: false,
    });
    // Another tenant's credential names no phone of this tenant.
    expect(entries[5]).not.toHaveProperty('mobileDeviceId');
    expect(entries[4]).not.toHaveProperty('tokenId');
  });

  it('filters by lock, phone, credential, result and the lock-time range [from, to)', async () => {
    expect(keys(await list('?securedObjectId=door'))).toEqual(['door#1', 'door#2', 'door#3', 'door#4']);
    expect(keys(await list('?mobileDeviceId=phone'))).toEqual(['door#1', 'door#2']);
    expect(keys(await list(`?tokenId=${otherPhoneTicket}`))).toEqual(['back#7', 'back#8']);
    expect(keys(await list('?result=denied'))).toEqual(['door#2', 'door#3', 'door#4']);
    expect(keys(await list(`?from=${T + 10}&to=${T + 20}`))).toEqual(['back#7', 'door#2']);
    expect(keys(await list(`?securedObjectId=back&result=granted&from=${T + 20}`))).toEqual(['back#8']);
    expect(await list('?securedObjectId=nowhere')).toEqual([]);
  });

  it('pages with Link: rel="next" under every filter, each entry once', async () => {
    const all = await list();
    const walked = await walk<Entry>(t, auditor, '/operatorapi/accesslog?limit=2');
    expect(walked.pages.map((page) => page.length)).toEqual([2, 2, 2]);
    expect(walked.items).toEqual(all);
    const first = await call(t, auditor, { method: 'GET', url: '/operatorapi/accesslog?securedObjectId=door&limit=3' });
    expect(nextLink(first)).toMatch(/^\/operatorapi\/accesslog\?securedObjectId=door&limit=3&cursor=/);
    expect(keys((await walk<Entry>(t, auditor, '/operatorapi/accesslog?securedObjectId=door&limit=1')).items)).toEqual(['door#1', 'door#2', 'door#3', 'door#4']);
    expect(keys((await walk<Entry>(t, auditor, '/operatorapi/accesslog?result=denied&limit=1')).items)).toEqual(['door#2', 'door#3', 'door#4']);
    expect(keys((await walk<Entry>(t, auditor, '/operatorapi/accesslog?mobileDeviceId=phone&limit=1')).items)).toEqual(['door#1', 'door#2']);
  });

  it('keeps entries of a lock registered twice apart, even with the same time and entryNo, across pages', async () => {
    const { acme, token } = tenants;
    const entry = { entryNo: 1, lockTime: T - 5, command: 'open', channel: 'btlespp', result: 'denied' };
    await upload(await lockToken(t, acme, 'porch'), '/deviceapi/securedobjects/porch/accesslog', { entries: [entry] });
    expect((await call(t, token, { method: 'DELETE', url: '/operatorapi/securedobjects/porch' })).statusCode).toBe(204);
    now += 1000;
    await lock(t, token, 'porch');
    await upload(await lockToken(t, acme, 'porch'), '/deviceapi/securedobjects/porch/accesslog', { entries: [entry] });
    const walked = await walk<Entry>(t, auditor, '/operatorapi/accesslog?securedObjectId=porch&limit=1');
    expect(walked.items.map((item) => item.receivedTime)).toEqual([START + 1000, START + 2000]);
    expect(keys((await walk<Entry>(t, auditor, '/operatorapi/accesslog?limit=1')).items).slice(0, 2)).toEqual(['porch#1', 'porch#1']);
  });

  it('keeps the lock\'s entry and a phone\'s report of the same number apart, each once across pages (migration 021 order)', async () => {
    const { acme } = tenants;
    const entry = { entryNo: 40, lockTime: T - 50, command: 'open', channel: 'btlespp', result: 'granted' };
    await upload(await lockToken(t, acme, 'back'), '/deviceapi/securedobjects/back/accesslog', { entries: [entry] });
    await upload(await phoneToken(t, acme, 'other-phone'), '/deviceapi/mobiledevices/other-phone/accesslog', { securedObjectId: 'back', entries: [entry] });
    const walked = await walk<Entry>(t, auditor, '/operatorapi/accesslog?securedObjectId=back&limit=1');
    expect(walked.items.filter((item) => item.entryNo === 40).map((item) => [item.via, item.signed])).toEqual([
      ['lock', true],
      ['other-phone', false],
    ]);
    expect(walked.items).toEqual(await list('?securedObjectId=back'));
    // A cursor of a page served before migration 021 (tag l1, no numbering) still continues the walk.
    const former = Buffer.from(JSON.stringify(['l1', T - 50, 'back', 40, await registeredAt('back')])).toString('base64url');
    const continued = await list(`?securedObjectId=back&cursor=${former}`);
    expect(continued.slice(0, 2).map((item) => [item.entryNo, item.via])).toEqual([
      [40, 'lock'],
      [40, 'other-phone'],
    ]);
  });

  async function registeredAt(lockId: string): Promise<number> {
    const { rows } = await t.database.db.query<{ created_at: number }>('SELECT created_at FROM secured_objects WHERE tenant_id = $1 AND id = $2', [tenants.acme.tenantId, lockId]);
    return Number(rows[0]!.created_at);
  }

  it('never shows another tenant\'s entries, even for the same lock id and ticket ids', async () => {
    const { other } = tenants;
    const otherAuditor = await clientToken(t.app, await createClient(t.app, other, ['audit:read']));
    const theirs = await list('', otherAuditor);
    expect(keys(theirs)).toEqual(['door#1', 'door#2']);
    expect(theirs.map((entry) => entry.result)).toEqual(['denied', 'granted']);
    expect(keys(await list(`?tokenId=${phoneTicket}`))).toEqual(['door#1', 'door#2']);
    expect((await list(`?tokenId=${phoneTicket}`)).every((entry) => entry.via === 'lock' && entry.mobileDeviceId === 'phone')).toBe(true);
    expect(keys(await list(`?tokenId=${phoneTicket}`, otherAuditor))).toEqual(['door#1']);
  });

  it('refuses bad queries and cursors with 400', async () => {
    for (const query of ['?result=maybe', '?limit=1001', '?limit=0', '?from=-1', '?to=1.5', '?unknown=1', '?securedObjectId=']) {
      expectProblem(await call(t, auditor, { method: 'GET', url: `/operatorapi/accesslog${query}` }), 400);
    }
    const forged = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    for (const cursor of ['not-a-cursor', forged(['l1', 1, 'door', 1]), forged(['l1', -1, 'door', 1, 1]), forged(['l1', 1, 'a\u0000', 1, 1]), forged(['x', 1, 'door', 1, 1]), forged([1, 2])]) {
      const response = await call(t, auditor, { method: 'GET', url: `/operatorapi/accesslog?cursor=${cursor}` });
      expect(expectProblem(response, 400).detail).toBe('The cursor is not one this server issued.');
    }
  });

  it('needs a token with audit:read', async () => {
    await expectAuthChecks(t, await clientToken(t.app, await createClient(t.app, tenants.acme, ['tokens:read'])), [
      { method: 'GET', url: '/operatorapi/accesslog', scope: 'audit:read' },
    ]);
  });
});
