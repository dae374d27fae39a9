// Scale runs for lock trust (docs/api-reference.md 6.1, 6.2, 8.2, 8.3): a phone's 500-ticket download with every credential
// signed, renewed or reused, and the full sync of a lock with a year of history. Each request changes state (or is a
// walk of many pages), so these are timed one at a time, median of BENCH_SCALE_RUNS, not with autocannon.
import { generateKeyPairSync } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type pg from 'pg';
import { NEXT_CHANGE_SEQ_CTE } from '../../src/db/repositories/change-log.repo.js';
import { holderKeyThumbprint, type HolderPublicKey } from '../../src/shared/holder-keys.js';
import {
  clientToken,
  median,
  memoryOf,
  round,
  scaleTenant,
  seedDevicesAndLocks,
  type ScaleContext,
  type ScaleResult,
  type ScaleRun,
} from '../scale.js';

const DAY_MS = 24 * 3600_000;
const YEAR_MS = 365 * DAY_MS;
/** A day in SQL, as bigint: `30 * 86400000` would overflow PostgreSQL's integer. */
const DAY = `${DAY_MS}::bigint`;
/** CREDENTIAL_MAX_LIFETIME as the service under test has it (default 7 days). */
const LIFETIME_MS = Number(process.env.CREDENTIAL_MAX_LIFETIME || 604_800) * 1000;

/** The phone-download run: one phone, its tickets over these locks, each lock with other phones' tickets. */
const PHONE_TICKETS = 500;
const PHONE_LOCKS = 50;
const OTHERS_PER_LOCK = 200;
/** Of those, revoked with a credential still alive: what each lock's revocation list carries. */
const REVOKED_PER_LOCK = 20;

/** The year-of-history run: tickets of one lock spread over the last year. */
const HISTORY_TICKETS = 100_000;
const SYNC_PAGE = 1000;
/** Requests of the nothing-new incremental sync; their median is reported. */
const INCREMENTAL_REQUESTS = 21;

/** One GET timed from the request to the last byte of the answer (the client's JSON parsing is left out). */
async function timedGet(context: ScaleContext, path: string, headers: Record<string, string>) {
  const started = performance.now();
  const response = await fetch(context.appUrl + path, { headers, signal: AbortSignal.timeout(120_000) });
  const text = await response.text();
  const seconds = (performance.now() - started) / 1000;
  if (response.status !== 200) throw new Error(`GET ${path} answered ${response.status}: ${text.slice(0, 300)}`);
  return { seconds, headers: response.headers, text, bytes: Buffer.byteLength(text) };
}

async function nextChangeSeq(db: pg.Client, tenantId: string): Promise<number> {
  const { rows } = await db.query<{ last_seq: string }>(NEXT_CHANGE_SEQ_CTE('$1'), [tenantId]);
  return Number(rows[0]!.last_seq);
}

/** A client of `scopes` bound to a device or lock (CLI), and its bearer header. */
async function boundClient(context: ScaleContext, tenant: string, scopes: string, bind: '--mobile-device' | '--secured-object', id: string) {
  const client = JSON.parse(await context.cli(['client', 'create', '--tenant', tenant, '--scopes', scopes, bind, id, '--json'])) as {
    clientId: string;
    clientSecret: string;
  };
  return { authorization: `Bearer ${await clientToken(context, client.clientId, client.clientSecret)}` };
}

/** VACUUM (ANALYZE) and CHECKPOINT, as the page rows settle their table (bench/scenarios/ticket-pages.ts). */
async function settle(db: pg.Client): Promise<void> {
  await db.query('VACUUM (ANALYZE) tickets');
  await db.query('CHECKPOINT').catch(() => undefined);
}

type Variant = 'first' | 'firstScheduled' | 'firstBound' | 'renewal' | 'cached' | 'cachedListsReused';

/** The scheduled phone's tickets' schedule (docs/api-reference.md 9): office hours and a Saturday morning, a holiday off. */
const BENCH_SCHEDULE = {
  weekly: [
    { days: ['MO', 'TU', 'WE', 'TH', 'FR'], from: '07:00', to: '19:00' },
    { days: ['SA'], from: '09:00', to: '13:00' },
  ],
  except: ['2026-12-24', '2026-12-25', '2027-01-01'],
};

/**
 * `GET /deviceapi/mobiledevices/{id}/tickets?limit=500` of one phone with 500 VALID tickets on 50 locks. Each round
 * measures, in this order, after an untimed set-up by SQL:
 * - first: the phone's credential columns and `downloaded_at` reset to NULL, so the download signs and seals all 500,
 *   stamps them and appends 500 audit events, as a first download does (same rows, same table: no fresh device whose
 *   tickets would have to be seeded between requests);
 * - cached: nothing reset, so all 500 stored credentials are unsealed and handed out again;
 * - cachedListsReused: the same again at once, so the 50 revocation lists also come from the service's cache;
 * - renewal: `credential_issued_at`/`credential_expires_at` moved four days back (less than half of the 7-day lifetime
 *   left), so all 500 are signed anew.
 * - firstScheduled: as first, for a second phone holding the same 500 tickets with a schedule (BENCH_SCHEDULE) on the
 *   same locks, whose zone is Europe/Berlin: every credential carries `win` (docs/api-reference.md 9), expanded as it is
 *   signed; compared with first.
 * Before first, firstScheduled, cached and renewal one new ticket (another phone's) is written on each of the 50 locks
 * with the next change number: every lock's serial rises, so its revocation list is signed anew as after any change
 * there, and the variants differ only in the credentials. An untimed round first warms the service up.
 */
async function phoneDownload(context: ScaleContext, db: pg.Client): Promise<ScaleResult[]> {
  const tenant = await scaleTenant(context, db, `lt-phone-${process.pid}`);
  const tenantId = tenant.tenantId;
  const now = Date.now();
  await seedDevicesAndLocks(db, tenantId, 'p', 3, PHONE_LOCKS, now);
  await db.query(`UPDATE secured_objects SET time_zone = 'Europe/Berlin' WHERE tenant_id = $1`, [tenantId]);
  const seq = await nextChangeSeq(db, tenantId);
  // Deterministic "random" validity, the same in every run.
  await db.query('SELECT setseed(0.42)');
  // The phone's tickets: 10 per lock, begun within the last 90 days, ending within the next year.
  await db.query(
    `INSERT INTO tickets (id, tenant_id, secured_object_id, mobile_device_id, begin_date, end_date, created_at, commands, channels, change_seq)
     SELECT gen_random_uuid(), $1, 'p-l' || ((n - 1) % $3 + 1), 'p-d1',
            $2::bigint - floor(random() * 90 * ${DAY})::bigint, $2::bigint + ${DAY} + floor(random() * 364 * ${DAY})::bigint,
            $2::bigint - 100 * ${DAY} + n, '{open}', '{btlespp}', $4::bigint
       FROM generate_series(1, $5) AS n`,
    [tenantId, now, PHONE_LOCKS, seq, PHONE_TICKETS],
  );
  // The scheduled phone: the same tickets with a schedule.
  await db.query(
    `INSERT INTO tickets (id, tenant_id, secured_object_id, mobile_device_id, begin_date, end_date, created_at, commands, channels, schedule, change_seq)
     SELECT gen_random_uuid(), tenant_id, secured_object_id, 'p-d2', begin_date, end_date, created_at, commands, channels, $3::jsonb, change_seq
       FROM tickets WHERE tenant_id = $1 AND mobile_device_id = $2`,
    [tenantId, 'p-d1', JSON.stringify(BENCH_SCHEDULE)],
  );
  // The bound phone: the same tickets, and a key of its own (docs/api-reference.md 11.2), so each credential carries cnf.
  await db.query(
    `INSERT INTO tickets (id, tenant_id, secured_object_id, mobile_device_id, begin_date, end_date, created_at, commands, channels, change_seq)
     SELECT gen_random_uuid(), tenant_id, secured_object_id, 'p-d3', begin_date, end_date, created_at, commands, channels, change_seq
       FROM tickets WHERE tenant_id = $1 AND mobile_device_id = 'p-d1'`,
    [tenantId],
  );
  const { x, y } = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' });
  const phoneKey: HolderPublicKey = { kty: 'EC', crv: 'P-256', x: x!, y: y! };
  await db.query(
    `UPDATE mobile_devices SET public_key = $3::jsonb, key_thumbprint = $4, key_registered_at = $5 WHERE tenant_id = $1 AND id = $2`,
    [tenantId, 'p-d3', JSON.stringify(phoneKey), holderKeyThumbprint(phoneKey), now],
  );
  // Other phones' tickets on the same locks; some revoked lately with a credential still alive (the lists carry them).
  await db.query(
    `INSERT INTO tickets (id, tenant_id, secured_object_id, mobile_device_id, begin_date, end_date, created_at, commands, channels,
                          revoked_at, downloaded_at, credential_issued_at, credential_expires_at, change_seq)
     SELECT gen_random_uuid(), $1, 'p-l' || l, 'p-other-' || o, $2::bigint - 30 * ${DAY}, $2::bigint + 60 * ${DAY},
            $2::bigint - 31 * ${DAY} + o, '{open}', '{btlespp}',
            CASE WHEN o <= $5 THEN $2::bigint - ${DAY} END, $2::bigint - 2 * ${DAY},
            $2::bigint - 2 * ${DAY}, $2::bigint + 5 * ${DAY}, $6::bigint
       FROM generate_series(1, $3) AS l, generate_series(1, $4) AS o`,
    [tenantId, now, PHONE_LOCKS, OTHERS_PER_LOCK, REVOKED_PER_LOCK, seq],
  );
  await settle(db);
  const headers = await boundClient(context, tenant.credentials.tenant, 'tokens:download', '--mobile-device', 'p-d1');
  const scheduledHeaders = await boundClient(context, tenant.credentials.tenant, 'tokens:download', '--mobile-device', 'p-d2');
  const boundHeaders = await boundClient(context, tenant.credentials.tenant, 'tokens:download', '--mobile-device', 'p-d3');
  const phone = [tenantId, 'p-d1'];
  const phoneOf = (variant: Variant) => (variant === 'firstScheduled' ? 'p-d2' : variant === 'firstBound' ? 'p-d3' : 'p-d1');
  // The locks are installed before phones download (docs/api-reference.md 8.1): the trust endpoint makes the tenant's first
  // ticket key and caches its issuer. Without this the first download of a new tenant's 500 tickets makes 500 key and
  // issuer look-ups at once, and on a loaded machine some wait past DB_CONNECT_TIMEOUT_MS for a connection (503).
  const installer = await boundClient(context, tenant.credentials.tenant, 'sync', '--secured-object', 'p-l1');
  const trust = await context.request({ url: context.appUrl, method: 'GET', path: '/deviceapi/securedobjects/p-l1/trust', headers: installer });
  if (trust.status !== 200) throw new Error(`GET /deviceapi/securedobjects/p-l1/trust answered ${trust.status}: ${JSON.stringify(trust.body).slice(0, 300)}`);

  const bumpSerials = async () =>
    db.query(
      `WITH change AS (${NEXT_CHANGE_SEQ_CTE('$1')})
       INSERT INTO tickets (id, tenant_id, secured_object_id, mobile_device_id, begin_date, end_date, created_at, commands, channels, change_seq)
       SELECT gen_random_uuid(), $1, 'p-l' || l, 'p-visitor', $2::bigint, $2::bigint + ${DAY}, $2::bigint, '{open}', '{btlespp}', change.last_seq
         FROM generate_series(1, $3) AS l, change`,
      [tenantId, Date.now(), PHONE_LOCKS],
    );
  const resetCredentials = (mobileDeviceId: string) =>
    db.query(
      `UPDATE tickets SET credential_encrypted = NULL, credential_kid = NULL, credential_issued_at = NULL,
              credential_expires_at = NULL, downloaded_at = NULL
        WHERE tenant_id = $1 AND mobile_device_id = $2`,
      [tenantId, mobileDeviceId],
    );
  const setUp: Record<Variant, () => Promise<unknown>> = {
    first: async () => {
      await resetCredentials('p-d1');
      await bumpSerials();
    },
    firstScheduled: async () => {
      await resetCredentials('p-d2');
      await bumpSerials();
    },
    firstBound: async () => {
      await resetCredentials('p-d3');
      await bumpSerials();
    },
    cached: bumpSerials,
    cachedListsReused: async () => undefined,
    renewal: async () => {
      await db.query(
        `UPDATE tickets SET credential_issued_at = credential_issued_at - 4 * ${DAY}, credential_expires_at = credential_expires_at - 4 * ${DAY}
          WHERE tenant_id = $1 AND mobile_device_id = $2`,
        phone,
      );
      await bumpSerials();
    },
  };
  const storedCredentials = async (mobileDeviceId: string) => {
    const { rows } = await db.query<{ id: string; credential_encrypted: Buffer | null }>(
      'SELECT id, credential_encrypted FROM tickets WHERE tenant_id = $1 AND mobile_device_id = $2',
      [tenantId, mobileDeviceId],
    );
    return new Map(rows.map((row) => [row.id, row.credential_encrypted]));
  };

  const variants: Variant[] = ['first', 'firstScheduled', 'firstBound', 'cached', 'cachedListsReused', 'renewal'];
  const samples: Record<Variant, number[]> = { first: [], firstScheduled: [], firstBound: [], renewal: [], cached: [], cachedListsReused: [] };
  /** What the last measured download of each variant did: credentials signed (stored anew), lists signed, bytes. */
  const work: Record<Variant, { signed: number; listsSigned: number; bytes: number; listBytes: number }> = {} as never;
  let previousLists = new Set<string>();
  for (let round_ = 0; round_ <= context.runs; round_++) {
    for (const variant of variants) {
      await setUp[variant]();
      const mobileDeviceId = phoneOf(variant);
      const before = await storedCredentials(mobileDeviceId);
      const answer = await timedGet(
        context,
        `/deviceapi/mobiledevices/${mobileDeviceId}/tickets?limit=${PHONE_TICKETS}`,
        variant === 'firstScheduled' ? scheduledHeaders : variant === 'firstBound' ? boundHeaders : headers,
      );
      const after = await storedCredentials(mobileDeviceId);
      const tickets = JSON.parse(answer.text) as { credential?: string; revocationList?: string }[];
      const lists = new Set(tickets.flatMap((ticket) => (ticket.revocationList ? [ticket.revocationList] : [])));
      if (tickets.length !== PHONE_TICKETS || tickets.some((ticket) => !ticket.credential)) {
        throw new Error(`${variant}: the download answered ${tickets.length} tickets, not ${PHONE_TICKETS} with credentials`);
      }
      const withWin = tickets.filter((ticket) => 'win' in (JSON.parse(Buffer.from(ticket.credential!.split('.')[1]!, 'base64url').toString()) as object)).length;
      if (withWin !== (variant === 'firstScheduled' ? PHONE_TICKETS : 0)) throw new Error(`${variant}: ${withWin} credentials carry win`);
      const withCnf = tickets.filter((ticket) => 'cnf' in (JSON.parse(Buffer.from(ticket.credential!.split('.')[1]!, 'base64url').toString()) as object)).length;
      if (withCnf !== (variant === 'firstBound' ? PHONE_TICKETS : 0)) throw new Error(`${variant}: ${withCnf} credentials carry cnf`);
      work[variant] = {
        signed: [...after].filter(([id, sealed]) => sealed !== null && !before.get(id)?.equals(sealed)).length,
        listsSigned: [...lists].filter((list) => !previousLists.has(list)).length,
        bytes: answer.bytes,
        // Each ticket carries its lock's list: this much of the answer is lists.
        listBytes: tickets.reduce((sum, ticket) => sum + Buffer.byteLength(ticket.revocationList ?? ''), 0),
      };
      previousLists = lists;
      // Round 0 is the warm-up.
      if (round_ > 0) samples[variant].push(answer.seconds);
    }
  }

  const first = median(samples.first);
  const firstScheduled = median(samples.firstScheduled);
  const firstBound = median(samples.firstBound);
  const renewal = median(samples.renewal);
  const cached = median(samples.cached);
  const cachedListsReused = median(samples.cachedListsReused);
  const list = (values: number[]) => values.map((value) => round(value * 1000, 1)).join('/');
  return [
    {
      name: 'lock trust: phone downloads 500 tickets (first, every credential signed)',
      description:
        `GET /deviceapi/mobiledevices/{id}/tickets?limit=${PHONE_TICKETS}: one phone, ${PHONE_TICKETS} VALID tickets on ${PHONE_LOCKS} locks ` +
        `(${REVOKED_PER_LOCK} revocations in each lock's list); credentials and downloadDate reset by SQL before each request`,
      serviceSeconds: round(first),
      baselineSeconds: round(cached),
      reference: 'cached',
      ratio: round(first / cached, 2),
      // Signing must not dominate a download (never asserted).
      goalRatio: 3,
      goalMet: Math.round((first / cached) * 100) / 100 <= 3,
      details: {
        runs: context.runs,
        samplesMs: list(samples.first),
        credentialsSigned: work.first.signed,
        listsSigned: work.first.listsSigned,
        responseBytes: work.first.bytes,
        revocationListBytes: work.first.listBytes,
      },
    },
    {
      name: 'lock trust: phone downloads 500 bound tickets (first, every credential bound to the phone key)',
      description:
        `the first download of a phone with a registered key whose ${PHONE_TICKETS} tickets are the same as above: each ` +
        'credential carries cnf.jkt (docs/api-reference.md 11.2), each ticket the lock\'s key when it has one; vs the same download unbound',
      serviceSeconds: round(firstBound),
      baselineSeconds: round(first),
      reference: 'first, unbound',
      ratio: round(firstBound / first, 2),
      goalRatio: 1.1,
      goalMet: Math.round((firstBound / first) * 100) / 100 <= 1.1,
      details: { runs: context.runs, samplesMs: list(samples.firstBound), credentialsSigned: work.firstBound.signed, responseBytes: work.firstBound.bytes },
    },
    {
      name: 'lock trust: phone downloads 500 scheduled tickets (first, every credential signed with win)',
      description:
        `the first download of a phone whose ${PHONE_TICKETS} tickets (the same as above) have a schedule on locks in Europe/Berlin: ` +
        'each credential carries win, its windows expanded as it is signed (docs/api-reference.md 9); vs the same download without schedules',
      serviceSeconds: round(firstScheduled),
      baselineSeconds: round(first),
      reference: 'first, without schedules',
      ratio: round(firstScheduled / first, 2),
      goalRatio: 1.5,
      goalMet: Math.round((firstScheduled / first) * 100) / 100 <= 1.5,
      details: {
        runs: context.runs,
        samplesMs: list(samples.firstScheduled),
        credentialsSigned: work.firstScheduled.signed,
        responseBytes: work.firstScheduled.bytes,
      },
    },
    {
      name: 'lock trust: phone downloads 500 tickets (renewal, past half-life)',
      description: 'the same download after credential_issued_at/credential_expires_at moved 4 days back: every credential signed anew',
      serviceSeconds: round(renewal),
      baselineSeconds: round(cached),
      reference: 'cached',
      ratio: round(renewal / cached, 2),
      goalRatio: null,
      goalMet: null,
      details: {
        runs: context.runs,
        samplesMs: list(samples.renewal),
        credentialsSigned: work.renewal.signed,
        listsSigned: work.renewal.listsSigned,
        responseBytes: work.renewal.bytes,
      },
    },
    {
      name: 'lock trust: phone downloads 500 tickets (cached, stored credentials reused)',
      description: 'the same download again: every stored credential unsealed and handed out; the revocation lists signed anew (their serial rose)',
      serviceSeconds: round(cached),
      baselineSeconds: null,
      ratio: null,
      goalRatio: null,
      goalMet: null,
      details: {
        runs: context.runs,
        samplesMs: list(samples.cached),
        credentialsSigned: work.cached.signed,
        listsSigned: work.cached.listsSigned,
        responseBytes: work.cached.bytes,
        listsReusedToo: round(cachedListsReused),
        listsReusedTooSamplesMs: list(samples.cachedListsReused),
        listsReusedTooListsSigned: work.cachedListsReused.listsSigned,
      },
    },
  ];
}

/** The `Link: <…>; rel="next"` target, or null on the last page. */
function nextLink(link: string | null): string | null {
  return (link ? /<([^>]*)>\s*;\s*rel="next"/.exec(link)?.[1] : undefined) ?? null;
}

interface SyncPage {
  tokens: unknown[];
  revocations: unknown[];
  cursor: string;
  keys?: unknown;
}

/**
 * One lock with 100,000 tickets over the last year, seeded set-based in one statement: created uniformly over the
 * year, beginning up to a week after creation, valid for a week (two in three) or a month; every second one revoked
 * at a uniform moment of its validity (before now); each downloaded daily while VALID, so its credential expires
 * one lifetime after its last download (a day at most before its revocation, end or now), clipped to its end. The
 * change numbers come from the service's own statement, one per day of the year in order: a ticket carries its
 * creation day's, a revoked one its revocation day's, as the service's writes stamp them.
 *
 * Measured: the full sync (no cursor, then `Link: rel="next"` pages of 1000 to the end), BENCH_SCALE_RUNS times,
 * with what it carried next to what the table says it should (revocations of tickets whose credential is still
 * alive: about one lifetime's worth, not the year's 50,000); then the incremental sync with nothing new.
 */
async function yearOfHistory(context: ScaleContext, db: pg.Client): Promise<ScaleResult[]> {
  const tenant = await scaleTenant(context, db, `lt-year-${process.pid}`);
  const tenantId = tenant.tenantId;
  const now = Date.now();
  const yearStart = now - YEAR_MS;
  await seedDevicesAndLocks(db, tenantId, 'y', 0, 1, now);
  const seqs: number[] = [];
  for (let day = 0; day <= 365; day++) seqs.push(await nextChangeSeq(db, tenantId));
  const started = performance.now();
  await db.query('SELECT setseed(0.42)');
  await db.query(
    `INSERT INTO tickets (id, tenant_id, secured_object_id, mobile_device_id, begin_date, end_date, created_at, commands, channels,
                          revoked_at, downloaded_at, credential_encrypted, credential_kid, credential_issued_at, credential_expires_at,
                          change_seq)
     SELECT gen_random_uuid(), $1, 'y-l1', 'y-phone-' || (s.n % 2000), v.begin_date, v.end_date, v.created_at, '{open}', '{btlespp}',
            r.revoked_at, v.created_at,
            -- A sealed credential's size (iv, JWS, tag): the heap rows a sync reads are as wide as the service's.
            decode(repeat(md5(s.n::text), 33), 'hex'), 'bench-kid',
            d.last_download / 1000 * 1000, least(d.last_download + $4::bigint, v.end_date) / 1000 * 1000,
            ($5::bigint[])[((coalesce(r.revoked_at, v.created_at) - $2::bigint) / ${DAY})::int + 1]
       FROM (SELECT n, random() AS r1, random() AS r2, random() AS r3, random() AS r4 FROM generate_series(1, $6) AS n) AS s
      CROSS JOIN LATERAL (
        SELECT c.created_at, c.created_at + floor(s.r2 * 7 * ${DAY})::bigint AS begin_date,
               c.created_at + floor(s.r2 * 7 * ${DAY})::bigint + CASE WHEN s.n % 3 = 0 THEN 30 ELSE 7 END * ${DAY} AS end_date
          FROM (SELECT $2::bigint + floor(s.r1 * ${YEAR_MS})::bigint AS created_at) AS c
      ) AS v
      CROSS JOIN LATERAL (
        SELECT CASE WHEN s.n % 2 = 0 THEN v.created_at + floor(s.r3 * (least(v.end_date, $3::bigint) - v.created_at))::bigint END AS revoked_at
      ) AS r
      CROSS JOIN LATERAL (
        SELECT greatest(v.created_at, coalesce(r.revoked_at, least(v.end_date, $3::bigint)) - floor(s.r4 * ${DAY})::bigint) AS last_download
      ) AS d`,
    [tenantId, yearStart, now, LIFETIME_MS, seqs, HISTORY_TICKETS],
  );
  const seeded = (performance.now() - started) / 1000;
  await settle(db);
  process.stderr.write(`[bench] seeded ${HISTORY_TICKETS} tickets of a year in ${seeded.toFixed(1)} s\n`);
  const headers = await boundClient(context, tenant.credentials.tenant, 'sync', '--secured-object', 'y-l1');

  /** What the table says a full sync should carry now (docs/api-reference.md 6.2, 8.2). */
  const expected = async () => {
    const at = Date.now();
    const { rows } = await db.query<{ tokens: number; revocations: number; revoked: number }>(
      `SELECT count(*) FILTER (WHERE revoked_at IS NULL AND end_date > $2)::int AS tokens,
              count(*) FILTER (WHERE revoked_at IS NOT NULL AND end_date > $2 AND credential_expires_at > $2)::int AS revocations,
              count(*) FILTER (WHERE revoked_at IS NOT NULL)::int AS revoked
         FROM tickets WHERE tenant_id = $1 AND secured_object_id = 'y-l1'`,
      [tenantId, at],
    );
    return rows[0]!;
  };

  const fullSync = async () => {
    let path: string | null = `/deviceapi/securedobjects/y-l1/sync?limit=${SYNC_PAGE}`;
    const pages: { text: string; bytes: number }[] = [];
    let seconds = 0;
    while (path !== null) {
      const page = await timedGet(context, path, headers);
      seconds += page.seconds;
      pages.push(page);
      const target = nextLink(page.headers.get('link'));
      path = target === null ? null : new URL(target, context.appUrl).pathname + new URL(target, context.appUrl).search;
    }
    // Counted after the walk: the client's parsing stays out of the time.
    const bodies = pages.map((page) => JSON.parse(page.text) as SyncPage);
    return {
      seconds,
      pages: pages.length,
      bytes: pages.reduce((sum, page) => sum + page.bytes, 0),
      tokens: bodies.reduce((sum, body) => sum + body.tokens.length, 0),
      revocations: bodies.reduce((sum, body) => sum + body.revocations.length, 0),
      keys: bodies[0]!.keys !== undefined,
      cursor: bodies[bodies.length - 1]!.cursor,
    };
  };

  const want = await expected();
  const memoryBefore = memoryOf(context.appPid);
  const syncs: Awaited<ReturnType<typeof fullSync>>[] = [];
  for (let run = 0; run < context.runs; run++) syncs.push(await fullSync());
  const memoryAfter = memoryOf(context.appPid);
  const last = syncs[syncs.length - 1]!;

  const incremental: number[] = [];
  let incrementalChanges = 0;
  const incrementalPath = `/deviceapi/securedobjects/y-l1/sync?limit=${SYNC_PAGE}&cursor=${encodeURIComponent(last.cursor)}`;
  for (let i = 0; i < INCREMENTAL_REQUESTS; i++) {
    const answer = await timedGet(context, incrementalPath, headers);
    const body = JSON.parse(answer.text) as SyncPage;
    incrementalChanges += body.tokens.length + body.revocations.length;
    incremental.push(answer.seconds);
  }

  return [
    {
      name: 'lock trust: full sync of a lock with a year of history (100,000 tickets)',
      description:
        'GET /deviceapi/securedobjects/{id}/sync without a cursor, then its Link rel="next" pages (limit 1000) to the end; ' +
        'tickets valid a week or a month over the last year, half revoked, all downloaded (credential expiry = last download + lifetime)',
      serviceSeconds: round(median(syncs.map((sync) => sync.seconds))),
      baselineSeconds: null,
      ratio: null,
      goalRatio: null,
      goalMet: null,
      details: {
        runs: context.runs,
        samplesMs: syncs.map((sync) => round(sync.seconds * 1000, 1)).join('/'),
        pages: last.pages,
        tokens: last.tokens,
        tokensExpected: want.tokens,
        revocations: last.revocations,
        revocationsExpected: want.revocations,
        revokedInTheYear: want.revoked,
        keysOnFirstPage: String(last.keys),
        responseBytes: last.bytes,
        serverRssBeforeMb: memoryBefore.rssMb,
        serverRssAfterMb: memoryAfter.rssMb,
        serverPeakRssMb: memoryAfter.peakMb,
        seedSeconds: round(seeded, 1),
      },
    },
    {
      name: 'lock trust: incremental sync of that lock, nothing new',
      description: `the same lock's sync with the full sync's last cursor, ${INCREMENTAL_REQUESTS} requests one after another (median)`,
      serviceSeconds: round(median(incremental), 4),
      baselineSeconds: null,
      ratio: null,
      goalRatio: null,
      goalMet: null,
      details: {
        requests: INCREMENTAL_REQUESTS,
        p50Ms: round(median(incremental) * 1000, 2),
        maxMs: round(Math.max(...incremental) * 1000, 2),
        changesCarried: incrementalChanges,
      },
    },
  ];
}

export const lockTrustScaleRuns: ScaleRun[] = [
  { name: 'lock trust: phone downloads 500 tickets', run: phoneDownload, citus: true },
  { name: 'lock trust: full sync of a lock with a year of history', run: yearOfHistory },
];
