// The operations of the model: the tenant's set-up (locks with their own keys, phones enrolled with theirs, a webhook),
// the generator that picks the next operation, and each operation run against the service and the reference
// simulators (src/simulator/): tickets, grants and membership changes (their tickets read back from the database),
// revocations, phone key replacement, ticket-key rotation, device deletion and replacement, lock deletion and
// replacement, lockdown start and end, downloads, lock syncs, visits at the door and access-log relays with receipts.
import { randomUUID } from 'node:crypto';
import { LockSimulator, type SyncAnswer } from '../../../src/simulator/lock-simulator.js';
import { PhoneSimulator, type DownloadedToken } from '../../../src/simulator/phone-simulator.js';
import { es256KeyPair, privateJwk, signEs256, type Es256KeyPair } from '../../../src/simulator/es256.js';
import { RECEIPT_TYPE } from '../../../src/shared/door-exchange.js';
import { checkOpened, type Violation } from './invariants.js';
import type { Prng } from './prng.js';
import { PUBLIC_URL, clientToken, request, userToken, type Instance, type Reply, type Service } from './service.js';
import { count, type ModelLock, type ModelPhone, type World } from './world.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

export type OperationName =
  | 'issue'
  | 'grant'
  | 'membership'
  | 'revoke'
  | 'rotate-key'
  | 'rotate-ticket-key'
  | 'delete-device'
  | 'replace-lock'
  | 'lockdown'
  | 'download'
  | 'sync'
  | 'visit'
  | 'relay';

/** How often each operation is picked, out of their sum. */
const WEIGHTS: Record<OperationName, number> = {
  issue: 16,
  grant: 4,
  membership: 6,
  revoke: 9,
  'rotate-key': 3,
  'rotate-ticket-key': 2,
  'delete-device': 2,
  'replace-lock': 2,
  lockdown: 4,
  download: 15,
  sync: 12,
  visit: 30,
  relay: 7,
};

export function nextOperation(random: Prng, favour: Partial<Record<OperationName, number>> = {}): OperationName {
  const weights = (Object.entries(WEIGHTS) as [OperationName, number][]).map(([name, weight]) => [name, weight + (favour[name] ?? 0)] as const);
  const total = weights.reduce((sum, [, weight]) => sum + weight, 0);
  let roll = random.next() * total;
  for (const [name, weight] of weights) {
    roll -= weight;
    if (roll < 0) return name;
  }
  return 'visit';
}

export interface Context {
  service: Service;
  world: World;
  random: Prng;
  /** Violations found during the step (the door decisions are checked as they happen). */
  found: Violation[];
  /** The newest change-log position any answer showed (for the over-claiming receipt). */
  maxSerialSeen: number;
}

const choose = (random: Prng) => (live: Instance[]) => random.pick(live);

/** A request as the operator's client makes it: any instance, failing over, a new token when the old one is refused. */
async function operatorCall(ctx: Context, method: string, path: string, body?: unknown, asManager = false, headers: Record<string, string> = {}): Promise<Reply> {
  return request(ctx.service, choose(ctx.random), method, path, asManager ? ctx.world.manager : ctx.world.operator, body, headers);
}

/** An Access API request as the tenant's user makes it (docs/api-reference.md 5), a new token when the old one is refused. */
async function accessCall(ctx: Context, method: string, path: string, body?: unknown): Promise<Reply> {
  const { access } = ctx.world;
  access.token ??= await userToken(ctx.service, access.client, access.login, access.password);
  let reply = await request(ctx.service, choose(ctx.random), method, path, access.token, body);
  if (reply.status === 401) {
    access.token = await userToken(ctx.service, access.client, access.login, access.password);
    reply = await request(ctx.service, choose(ctx.random), method, path, access.token, body);
  }
  return reply;
}

/**
 * Grants, membership changes and lock deletions make and revoke tickets the model did not name: it reads them back
 * after the definite answer. `answeredAt` (after the commit) as their revocation time errs towards fewer obligations.
 */
async function reconcileTickets(ctx: Context, answeredAt: number): Promise<{ made: number; revoked: number }> {
  const { rows } = await ctx.service.db.query<{ id: string; lock_id: string; device_id: string; override: boolean; revoked: boolean }>(
    `SELECT id::text AS id, secured_object_id AS lock_id, mobile_device_id AS device_id, override, revoked_at IS NOT NULL AS revoked
       FROM tickets WHERE tenant_id = $1`,
    [ctx.world.tenantId],
  );
  let made = 0;
  let revoked = 0;
  for (const row of rows) {
    const known = ctx.world.tickets.get(row.id);
    if (!known) {
      ctx.world.tickets.set(row.id, { id: row.id, lockId: row.lock_id, deviceId: row.device_id, override: row.override, downloaded: false, ...(row.revoked ? { revokedAt: answeredAt } : {}) });
      made += 1;
    } else if (row.revoked && known.revokedAt === undefined) {
      known.revokedAt = answeredAt;
      revoked += 1;
    }
  }
  return { made, revoked };
}

/** The resident and lock group the grants join, made at the start with the first phones and locks. */
export async function addGroups(ctx: Context): Promise<void> {
  const { world } = ctx;
  const deviceIds = activePhones(world).slice(0, 2).map((phone) => phone.deviceId);
  const lockIds = world.locks.slice(0, 2).map((lock) => lock.id);
  const resident = await accessCall(ctx, 'POST', '/v1/residents', { name: 'model resident', mobileDeviceIds: deviceIds });
  expectStatus(resident, 201, 'resident');
  const group = await accessCall(ctx, 'POST', '/v1/lock-groups', { name: 'model lock group', securedObjectIds: lockIds });
  expectStatus(group, 201, 'lock group');
  world.resident = { id: (resident.body as { id: string }).id, deviceIds: new Set(deviceIds) };
  world.lockGroup = { id: (group.body as { id: string }).id, lockIds: new Set(lockIds) };
}

/** One membership change: a phone into or out of the resident, or a lock into or out of the lock group. */
async function changeMembership(ctx: Context): Promise<string> {
  const { world, random } = ctx;
  const { resident, lockGroup } = world;
  const choices: { path: string; method: 'PUT' | 'DELETE'; apply: () => void }[] = [];
  for (const phone of activePhones(world)) {
    const member = resident.deviceIds.has(phone.deviceId);
    choices.push({
      path: `/v1/residents/${resident.id}/mobiledevices/${phone.deviceId}`,
      method: member ? 'DELETE' : 'PUT',
      apply: () => (member ? resident.deviceIds.delete(phone.deviceId) : resident.deviceIds.add(phone.deviceId)),
    });
  }
  for (const lock of world.locks) {
    const member = lockGroup.lockIds.has(lock.id);
    choices.push({
      path: `/v1/lock-groups/${lockGroup.id}/securedobjects/${lock.id}`,
      method: member ? 'DELETE' : 'PUT',
      apply: () => (member ? lockGroup.lockIds.delete(lock.id) : lockGroup.lockIds.add(lock.id)),
    });
  }
  const change = random.pick(choices);
  const reply = await accessCall(ctx, change.method, change.path);
  // 404: a retry after a lost answer finds the member already gone.
  if (reply.status !== 200 && !(change.method === 'DELETE' && reply.status === 404)) expectStatus(reply, 200, `membership ${change.method}`);
  change.apply();
  const { made, revoked } = await reconcileTickets(ctx, Date.now());
  return `membership ${change.method} ${change.path} (${reply.status}): ${made} tickets made, ${revoked} revoked`;
}

async function phoneCall(ctx: Context, phone: ModelPhone, method: string, path: string, body?: unknown): Promise<Reply> {
  try {
    phone.token ??= await clientToken(ctx.service, phone.client);
    let reply = await request(ctx.service, choose(ctx.random), method, path, phone.token, body);
    if (reply.status === 401) {
      phone.token = await clientToken(ctx.service, phone.client);
      reply = await request(ctx.service, choose(ctx.random), method, path, phone.token, body);
    }
    return reply;
  } catch (error) {
    // A deleted device's client is deleted with it: its phone gets no token any more.
    if (String(error).includes('token refused: 401')) return { status: 401, body: String(error), ms: 0, contentType: null, link: null };
    throw error;
  }
}

function expectStatus(reply: Reply, status: number, what: string): void {
  if (reply.status !== status) throw new Error(`${what} answered ${reply.status}: ${JSON.stringify(reply.body).slice(0, 400)}`);
}

async function registerKey(ctx: Context, holder: 'mobiledevices' | 'securedobjects', id: string, token: string, key: Es256KeyPair, attempt = 0): Promise<Reply> {
  const nonce = await request(ctx.service, choose(ctx.random), 'POST', '/deviceapi/nonces', token);
  expectStatus(nonce, 200, 'nonce');
  const proof = signEs256(key.privateKey, { typ: 'key-proof+jwt' }, { aud: PUBLIC_URL, nonce: (nonce.body as { nonce: string }).nonce, iat: Math.floor(Date.now() / 1000) });
  const reply = await request(ctx.service, choose(ctx.random), 'PUT', `/deviceapi/${holder}/${id}/key`, token, { publicKey: key.publicKey, proof });
  // A retry after a lost answer spends the nonce again (400): the same key with a fresh nonce changes nothing if it was stored.
  if (reply.status === 400 && attempt < 2) return registerKey(ctx, holder, id, token, key, attempt + 1);
  return reply;
}

async function boundClient(ctx: Context, scopes: string[], binding: Record<string, string>): Promise<{ clientId: string; clientSecret: string }> {
  const created = await operatorCall(ctx, 'POST', '/operatorapi/oauthclients', { name: `model ${Object.values(binding)[0]}`, scopes, ...binding });
  expectStatus(created, 201, 'client');
  return created.body as { clientId: string; clientSecret: string };
}

export async function addLock(ctx: Context, id: string, online: boolean): Promise<ModelLock> {
  expectStatus(
    await operatorCall(ctx, 'POST', '/operatorapi/securedobjects', { id, channels: ['btlespp'], localName: id, uuid: '6f2a2d7e-1c3b-4d5e-8f90-a1b2c3d4e5f6' }, false, {
      'idempotency-key': randomUUID(),
    }),
    201,
    'lock',
  );
  const syncClient = await boundClient(ctx, ['sync'], { securedObjectId: id });
  const key = es256KeyPair();
  expectStatus(await registerKey(ctx, 'securedobjects', id, await clientToken(ctx.service, syncClient), key), 200, 'lock key');
  const syncToken = await clientToken(ctx.service, syncClient, 'sync');
  const trust = await request(ctx.service, choose(ctx.random), 'GET', `/deviceapi/securedobjects/${id}/trust`, syncToken);
  expectStatus(trust, 200, 'trust');
  const lock: ModelLock = {
    id,
    sim: new LockSimulator(trust.body as never, { key: privateJwk(key) }),
    key,
    online,
    skewMs: 0,
    syncClient,
    syncToken,
    lastSyncStart: Number.NEGATIVE_INFINITY,
    lastVisitDownload: Number.NEGATIVE_INFINITY,
  };
  if (online) await syncLock(ctx, lock);
  return lock;
}

export async function addPhone(ctx: Context): Promise<ModelPhone> {
  const deviceId = `phone-${++ctx.world.nextDevice}`;
  expectStatus(await operatorCall(ctx, 'POST', '/operatorapi/mobiledevices', { id: deviceId }, false, { 'idempotency-key': randomUUID() }), 201, 'device');
  const client = await boundClient(ctx, ['tokens:download'], { mobileDeviceId: deviceId });
  const key = es256KeyPair();
  const phone: ModelPhone = { deviceId, sim: new PhoneSimulator({ key: privateJwk(key) }), key, client, held: [], downloadedAt: undefined, retired: false, offlineUntilStep: 0 };
  phone.token = await clientToken(ctx.service, client);
  expectStatus(await registerKey(ctx, 'mobiledevices', deviceId, phone.token, key), 200, 'phone key');
  ctx.world.phones.push(phone);
  return phone;
}

const activePhones = (world: World) => world.phones.filter((phone) => !phone.retired);

/** Runs `name`; answers what it did, for the step's line. */
export async function runOperation(ctx: Context, name: OperationName, step: number, forPhone?: ModelPhone): Promise<string> {
  const { world, random } = ctx;
  count(world, name);
  switch (name) {
    case 'issue': {
      const lock = random.pick(world.locks);
      const phone = forPhone ?? random.pick(activePhones(world));
      const override = random.chance(0.15);
      const now = Date.now();
      const reply = await operatorCall(
        ctx,
        'POST',
        '/operatorapi/tickets',
        { securedObjectId: lock.id, mobileDeviceId: phone.deviceId, beginDate: now - HOUR, endDate: now + DAY, commands: ['open'], channels: ['btlespp'], ...(override ? { override: true } : {}) },
        override,
        { 'idempotency-key': randomUUID() },
      );
      if (reply.status === 409) {
        // The instance first asked was killed holding the key, before it stored its answer: a retry gets 409 until the
        // key's lease runs out (docs/api-reference.md 7.6), and the create may or may not have committed. The model
        // reads what is there, as a caller that must know lists what it created.
        const { made } = await reconcileTickets(ctx, Date.now());
        return `issue ${lock.id}/${phone.deviceId}: its key held by a killed instance (409), ${made} ticket(s) found`;
      }
      expectStatus(reply, 201, 'ticket');
      const id = (reply.body as { id: string }).id;
      world.tickets.set(id, { id, lockId: lock.id, deviceId: phone.deviceId, override, downloaded: false });
      return `issue ${id} ${lock.id}/${phone.deviceId}${override ? ' override' : ''}`;
    }
    case 'grant': {
      const now = Date.now();
      const reply = await accessCall(ctx, 'POST', '/v1/access-permissions', {
        residentId: world.resident.id,
        lockGroupId: world.lockGroup.id,
        beginDate: now - HOUR,
        endDate: now + DAY,
        commands: ['open'],
        channels: ['btlespp'],
      });
      expectStatus(reply, 201, 'access permission');
      const { made, revoked } = await reconcileTickets(ctx, Date.now());
      return `grant ${(reply.body as { id: string }).id}: ${made} tickets made, ${revoked} revoked`;
    }
    case 'membership':
      return changeMembership(ctx);
    case 'rotate-ticket-key': {
      // A normal rotation: announced for a credential lifetime before it signs (docs/api-reference.md 8.1); 409 while
      // an announced key is pending.
      const reply = await operatorCall(ctx, 'POST', '/operatorapi/ticket-keys/rotations', {}, true);
      if (reply.status !== 201 && reply.status !== 409) expectStatus(reply, 201, 'ticket-key rotation');
      return `rotate-ticket-key (${reply.status}${reply.status === 201 ? ` ${(reply.body as { kid: string }).kid}` : ''})`;
    }
    case 'revoke': {
      const live = [...world.tickets.values()].filter((ticket) => ticket.revokedAt === undefined);
      if (live.length === 0) return 'revoke: nothing to revoke';
      const ticket = random.pick(live);
      const reply = await operatorCall(ctx, 'DELETE', `/operatorapi/tickets/${ticket.id}`);
      if (reply.status !== 200 && reply.status !== 409) expectStatus(reply, 200, 'revoke');
      ticket.revokedAt = Date.now();
      return `revoke ${ticket.id} (${reply.status})`;
    }
    case 'rotate-key': {
      const phone = random.pick(activePhones(world));
      const key = es256KeyPair();
      phone.token ??= await clientToken(ctx.service, phone.client);
      const reply = await registerKey(ctx, 'mobiledevices', phone.deviceId, phone.token, key);
      expectStatus(reply, 200, 'key replacement');
      world.keyRevokedAt.set(phone.key.thumbprint, Date.now());
      // The old handset keeps its download and its old key: it can still be shown at a door.
      phone.retired = true;
      world.phones.push({ ...phone, sim: new PhoneSimulator({ key: privateJwk(key) }), key, held: [], downloadedAt: undefined, retired: false, offlineUntilStep: 0 });
      return `rotate-key ${phone.deviceId}`;
    }
    case 'delete-device': {
      const phone = random.pick(activePhones(world));
      const reply = await operatorCall(ctx, 'DELETE', `/operatorapi/mobiledevices/${phone.deviceId}`);
      if (reply.status !== 204 && reply.status !== 404) expectStatus(reply, 204, 'device deletion');
      const now = Date.now();
      for (const ticket of world.tickets.values()) if (ticket.deviceId === phone.deviceId && ticket.revokedAt === undefined) ticket.revokedAt = now;
      world.keyRevokedAt.set(phone.key.thumbprint, now);
      for (const holder of world.phones) if (holder.deviceId === phone.deviceId) holder.retired = true;
      world.resident.deviceIds.delete(phone.deviceId);
      const replacement = await addPhone(ctx);
      return `delete-device ${phone.deviceId}, replaced by ${replacement.deviceId}`;
    }
    case 'replace-lock': {
      // The lock is taken off the door and deleted; a new lock with a new id goes on (docs/api-reference.md 4.1).
      if (world.locks.length < 2) return 'replace-lock: one lock left';
      const lock = random.pick(world.locks);
      const reply = await operatorCall(ctx, 'DELETE', `/operatorapi/securedobjects/${lock.id}`);
      if (reply.status !== 204 && reply.status !== 404) expectStatus(reply, 204, 'lock deletion');
      const { revoked } = await reconcileTickets(ctx, Date.now());
      world.locks = world.locks.filter((candidate) => candidate !== lock);
      world.lockGroup.lockIds.delete(lock.id);
      const replacement = await addLock(ctx, `door-${++world.nextLock}`, lock.online);
      world.locks.push(replacement);
      return `replace-lock ${lock.id} (${reply.status}, ${revoked} tickets revoked), replaced by ${replacement.id}`;
    }
    case 'lockdown': {
      const current = world.lockdowns[world.lockdowns.length - 1];
      const mode = current?.mode === 'lockdown' ? 'normal' : 'lockdown';
      const sentAt = Date.now();
      const reply = await operatorCall(ctx, 'POST', '/operatorapi/lockdowns', { scope: 'tenant', mode, reason: `model step ${step}` }, true, { 'idempotency-key': randomUUID() });
      expectStatus(reply, 201, 'lockdown');
      world.lockdowns.push({ mode, serial: (reply.body as { serial: number }).serial, sentAt, committedAt: Date.now() });
      return `lockdown ${mode}`;
    }
    case 'download': {
      const phones = activePhones(world).filter((phone) => phone.offlineUntilStep <= step);
      if (phones.length === 0) return 'download: every phone offline';
      const phone = random.pick(phones);
      await download(ctx, phone);
      return `download ${phone.deviceId}`;
    }
    case 'sync': {
      const lock = random.pick(world.locks.filter((candidate) => candidate.online));
      await syncLock(ctx, lock);
      return `sync ${lock.id}`;
    }
    case 'visit':
      return visit(ctx);
    case 'relay': {
      const phones = world.phones.filter((phone) => phone.sim.receiptUploads().length > 0);
      if (phones.length === 0) return 'relay: no receipts held';
      const phone = random.pick(phones);
      const statuses: number[] = [];
      for (const upload of phone.sim.receiptUploads()) {
        const reply = await phoneCall(ctx, phone, 'POST', `/deviceapi/mobiledevices/${phone.deviceId}/accesslog`, upload);
        statuses.push(reply.status);
        // Answered: delivered, or refused for good (a deleted device's client): the phone drops them either way.
        if (reply.status < 500 && reply.status !== 0) phone.sim.acknowledgeReceipts(upload.securedObjectId);
      }
      return `relay ${phone.deviceId} (${statuses.join(',')})`;
    }
  }
}

export async function download(ctx: Context, phone: ModelPhone): Promise<void> {
  const started = Date.now();
  const reply = await phoneCall(ctx, phone, 'GET', `/deviceapi/mobiledevices/${phone.deviceId}/tickets?limit=500`);
  expectStatus(reply, 200, 'download');
  const tokens = reply.body as DownloadedToken[];
  phone.sim.store(tokens);
  phone.held = tokens;
  phone.downloadedAt = started;
  for (const token of tokens) {
    const ticket = ctx.world.tickets.get(token.id);
    if (ticket) ticket.downloaded = true;
  }
}

export async function syncLock(ctx: Context, lock: ModelLock): Promise<void> {
  const started = Date.now();
  const breakage = ctx.world.breakage;
  for (let page = 0; page < 1000; page++) {
    const path = `/deviceapi/securedobjects/${lock.id}/sync${lock.sim.cursor ? `?cursor=${encodeURIComponent(lock.sim.cursor)}` : ''}`;
    lock.syncToken ??= await clientToken(ctx.service, lock.syncClient, 'sync');
    let reply = await request(ctx.service, choose(ctx.random), 'GET', path, lock.syncToken);
    if (reply.status === 401) {
      lock.syncToken = await clientToken(ctx.service, lock.syncClient, 'sync');
      reply = await request(ctx.service, choose(ctx.random), 'GET', path, lock.syncToken);
    }
    expectStatus(reply, 200, `sync of ${lock.id}`);
    let answer = reply.body as SyncAnswer;
    if (answer.serial !== undefined) ctx.maxSerialSeen = Math.max(ctx.maxSerialSeen, answer.serial);
    if (breakage === 'sync-skips-revocations') answer = { ...answer, revocations: [], revokedKeys: [] };
    if (breakage === 'lock-ignores-lock-state') {
      const { lockState: _ignored, ...rest } = answer;
      answer = rest;
    }
    lock.sim.applySync(answer);
    if (!reply.link?.includes('rel="next"')) break;
  }
  lock.lastSyncStart = started;
  count(ctx.world, 'sync-completed');
}

/** A phone at a door where it holds a token: hello, the list and state it carries, its credential and proof, the decision. */
async function visit(ctx: Context): Promise<string> {
  const { world, random } = ctx;
  const visits = world.phones.flatMap((phone) => world.locks.filter((lock) => hasToken(phone, lock.id)).map((lock) => ({ phone, lock })));
  if (visits.length === 0) return 'visit: no phone holds a token';
  const { phone, lock } = random.pick(visits);
  const lockNow = Date.now() + lock.skewMs;
  const shown = phone.sim.present(lock.id, lock.sim.hello(lockNow), 'open', Date.now());
  if (!('presentation' in shown)) {
    count(world, `visit-refused-by-phone-${shown.refused}`);
    return `visit ${phone.deviceId}@${lock.id}: the phone showed nothing (${shown.refused})`;
  }
  const { presentation } = shown;
  if (presentation.lockState !== undefined && world.breakage !== 'lock-ignores-lock-state') lock.sim.applyLockState(presentation.lockState);
  if (presentation.revocationList !== undefined) {
    const serial = listSerial(presentation.revocationList);
    if (serial !== undefined) ctx.maxSerialSeen = Math.max(ctx.maxSerialSeen, serial);
    if (world.breakage !== 'lock-ignores-phone-list') await lock.sim.applyRevocationList(presentation.revocationList);
  }
  if (phone.downloadedAt !== undefined) lock.lastVisitDownload = Math.max(lock.lastVisitDownload, phone.downloadedAt);
  const decision = await lock.sim.decide(presentation.credential, 'open', lockNow, 'btlespp', presentation.proof);
  count(world, `decision-${decision.decision}-${decision.reason}`);
  if (decision.decision === 'open') {
    const claims = JSON.parse(Buffer.from(presentation.credential.split('.')[1] ?? '', 'base64url').toString('utf8')) as { cnf?: { jkt?: string }; ovr?: boolean };
    ctx.found.push(...checkOpened(world, { lock, ticketId: decision.ticketId, jkt: claims.cnf?.jkt, override: claims.ovr === true }));
  }
  if (random.chance(0.6)) {
    const receipt =
      world.breakage === 'receipt-overclaims' && ctx.maxSerialSeen > lock.sim.serial
        ? signEs256(lock.key.privateKey, { typ: RECEIPT_TYPE }, { sub: lock.id, appliedSerial: ctx.maxSerialSeen, lockTime: lockNow, entries: [] })
        : lock.sim.receipt(lockNow);
    phone.sim.takeReceipt(lock.id, receipt);
  }
  return `visit ${phone.deviceId}@${lock.id} ${presentation.tokenId}: ${decision.decision} ${decision.reason}`;
}

const hasToken = (phone: ModelPhone, lockId: string) => phone.held.some((token) => token.securedObjectId === lockId && token.credential !== undefined);

function listSerial(jws: string): number | undefined {
  try {
    const serial = (JSON.parse(Buffer.from(jws.split('.')[1] ?? '', 'base64url').toString('utf8')) as { serial?: unknown }).serial;
    return typeof serial === 'number' ? serial : undefined;
  } catch {
    return undefined;
  }
}
