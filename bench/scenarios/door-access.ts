// "Who can open this door" (docs/api-reference.md 13.2) in a tenant with 10,000 locks and 100,000 residents.
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { NEXT_CHANGE_SEQ_CTE } from '../../src/db/repositories/change-log.repo.js';
import type { Comparison, Scenario, ScenarioContext } from '../types.js';
import { median, round, type ScaleContext, type ScaleResult, type ScaleRun } from '../scale.js';
import { accessToken, operatorFixture, type OperatorFixture } from './fixtures.js';

const LOCKS = 10_000;
const RESIDENTS = 100_000;
/**
 * The shape of the seeded tenant: 100 buildings of 100 locks, 1,000 residents each, one phone per resident. Every
 * resident holds a ticket for its building's front door (the lock `door-{building × 100}`) and one for its own door;
 * one resident in five has weekday schedules in the lock's time zone, one in ten revoked tickets. So a front door has
 * 1,000 tickets (900 live; 200 of them scheduled, open on weekdays 07:00-19:00 Helsinki time), and the table 200,000.
 * Which residents are picked mixes the resident's building position (g / 100) with its building (g % 100): picking by
 * g alone (g % 5) would pick every resident of the front door door-0 (g = 0, 100, 200, …), so that its whole answer
 * was closed by the schedule on weekends and nights, an empty page measured instead of 900 items.
 */
const BUILDINGS = 100;
const FRONT_DOOR = 'door-0';
const OWN_DOOR = 'door-1';

function log(message: string): void {
  process.stderr.write(`[bench] ${message}\n`);
}

async function withClient<T>(databaseUrl: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Each statement set-based, every one naming the tenant, as the service's own writes do. */
async function seed(client: pg.Client, fixture: OperatorFixture): Promise<void> {
  const tenant = fixture.tenantId;
  const now = Date.now();
  await client.query(
    `INSERT INTO secured_objects (tenant_id, id, channels, local_name, uuid, created_at, time_zone)
     SELECT $1, 'door-' || g, ARRAY['btlespp'], 'DOOR' || g, gen_random_uuid(), $2::bigint + g, 'Europe/Helsinki'
       FROM generate_series(0, $3::int - 1) AS g`,
    [tenant, now, LOCKS],
  );
  await client.query(
    `INSERT INTO mobile_devices (tenant_id, id, created_at)
     SELECT $1, 'phone-' || g, $2::bigint + g FROM generate_series(0, $3::int - 1) AS g`,
    [tenant, now, RESIDENTS],
  );
  await client.query(
    `INSERT INTO residents (tenant_id, id, name, created_at)
     SELECT $1, gen_random_uuid(), 'Resident ' || g, $2::bigint + g FROM generate_series(0, $3::int - 1) AS g`,
    [tenant, now, RESIDENTS],
  );
  // Resident n (in creation order) holds phone n.
  await client.query(
    `INSERT INTO resident_devices (tenant_id, resident_id, mobile_device_id)
     SELECT $1, r.id, 'phone-' || (r.created_at - $2::bigint) FROM residents r WHERE r.tenant_id = $1`,
    [tenant, now],
  );
  await seedTickets(client, fixture, now);
  await client.query('VACUUM (ANALYZE) secured_objects, mobile_devices, residents, resident_devices, tickets');
}

/**
 * Two tickets per resident: its building's front door and its own door (both grant open), created in resident order.
 * Separate from the rest: the ticket-pages rows empty the whole tickets table after the rows above (ticket-pages.ts),
 * and the scale run below seeds them again.
 */
async function seedTickets(client: pg.Client, fixture: OperatorFixture, now: number): Promise<void> {
  const tenant = fixture.tenantId;
  const { rows } = await client.query<{ last_seq: string }>(NEXT_CHANGE_SEQ_CTE('$1'), [tenant]);
  const seq = Number(rows[0]!.last_seq);
  await client.query(
    `INSERT INTO tickets (id, tenant_id, secured_object_id, mobile_device_id, begin_date, end_date, created_at, commands,
                          channels, change_seq, schedule, revoked_at)
     SELECT gen_random_uuid(), $1,
            CASE WHEN k = 0 THEN 'door-' || ((g % $5::int) * ($6::int / $5::int)) ELSE 'door-' || (g % $6::int) END,
            'phone-' || g, 0, $2::bigint + 365::bigint * 86400000, $2::bigint + 2 * g + k, ARRAY['open'], ARRAY['btlespp'], $4::bigint,
            CASE WHEN (g / 100 + g % 100) % 5 = 0 THEN '{"weekly":[{"days":["MO","TU","WE","TH","FR"],"from":"07:00","to":"19:00"}]}'::jsonb END,
            CASE WHEN (g / 100 + g % 100) % 10 = 3 THEN $2::bigint END
       FROM generate_series(0, $3::int - 1) AS g, (VALUES (0), (1)) AS v (k)`,
    [tenant, now, RESIDENTS, seq, BUILDINGS, LOCKS],
  );
}

let seeded: Promise<OperatorFixture> | null = null;

function seedOnce(context: ScenarioContext): Promise<OperatorFixture> {
  seeded ??= (async () => {
    const fixture = await operatorFixture(context, 'bench-door-access');
    const started = performance.now();
    await withClient(context.databaseUrl, (client) => seed(client, fixture));
    log(`seeded ${LOCKS} locks, ${RESIDENTS} residents with a phone each and ${2 * RESIDENTS} tickets in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    return fixture;
  })();
  return seeded;
}

const FRONT_NAME = `GET /operatorapi/securedobjects/{id}/access?limit=1000 (front door, ${LOCKS} locks, ${RESIDENTS} residents)`;
const OWN_NAME = `GET /operatorapi/securedobjects/{id}/access?limit=1000 (own door, ${LOCKS} locks, ${RESIDENTS} residents)`;

export const doorAccessScenarios: Scenario[] = [
  {
    name: FRONT_NAME,
    method: 'GET',
    path: '/operatorapi/securedobjects/{id}/access?limit=1000',
    baseline: 'hello',
    async setup(context) {
      const fixture = await seedOnce(context);
      return { path: `/operatorapi/securedobjects/${FRONT_DOOR}/access?limit=1000`, headers: fixture.headers };
    },
  },
  {
    name: OWN_NAME,
    method: 'GET',
    path: '/operatorapi/securedobjects/{id}/access?limit=1000',
    baseline: 'hello',
    async setup(context) {
      const fixture = await seedOnce(context);
      return { path: `/operatorapi/securedobjects/${OWN_DOOR}/access?limit=1000`, headers: fixture.headers };
    },
  },
];

export const doorAccessComparisons: Comparison[] = [
  {
    // The same tenant and table: what a door with 1,000 tickets costs next to one with a few.
    name: 'who can open this door, p50 front door (1,000 tickets) / own door (10 tickets)',
    numerator: FRONT_NAME,
    denominator: OWN_NAME,
  },
];

/** Requests one after another per door, after a few unmeasured ones: an operator's console asks one at a time. */
const SEQUENTIAL_REQUESTS = 100;
const SEQUENTIAL_WARMUP = 5;
/** The goal of "who can open this door now" for the front door: p95 at most this. */
const GOAL_P95_MS = 1000;

const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil((values.length * p) / 100) - 1)]!;

/** Each request's time to the last byte of its answer, one request at a time, and the answer's items. */
async function oneAtATime(url: string, headers: Record<string, string>): Promise<{ samples: number[]; items: number }> {
  const once = async () => {
    const started = performance.now();
    const response = await fetch(url, { headers, signal: AbortSignal.timeout(60_000) });
    const body = await response.text();
    const ms = performance.now() - started;
    if (response.status !== 200) throw new Error(`${url} answered ${response.status}: ${body.slice(0, 200)}`);
    return { ms, items: (JSON.parse(body) as unknown[]).length };
  };
  for (let request = 0; request < SEQUENTIAL_WARMUP; request++) await once();
  const samples: number[] = [];
  let items = 0;
  for (let request = 0; request < SEQUENTIAL_REQUESTS; request++) {
    const answer = await once();
    samples.push(answer.ms);
    items = answer.items;
  }
  return { samples, items };
}

/** The measure: the front door's p95, one request at a time, beside the own door's in the same run. */
async function doorAccessOneAtATime(context: ScaleContext): Promise<ScaleResult[]> {
  const fixture = await seedOnce({ ...context, url: context.appUrl });
  // The ticket-pages rows, run after the rows above, emptied the tickets table: the doors' tickets are made again.
  await withClient(context.databaseUrl, async (client) => {
    const { rows } = await client.query('SELECT 1 FROM tickets WHERE tenant_id = $1 AND secured_object_id = $2 LIMIT 1', [fixture.tenantId, FRONT_DOOR]);
    if (rows.length > 0) return;
    await seedTickets(client, fixture, Date.now());
    await client.query('VACUUM (ANALYZE) tickets');
  });
  // A token of its own: the rows' may be near its end by now.
  const headers = { authorization: `Bearer ${await accessToken({ ...context, url: context.appUrl }, fixture.credentials)}` };
  const path = (door: string) => `${context.appUrl}/operatorapi/securedobjects/${door}/access?limit=1000`;
  const front = await oneAtATime(path(FRONT_DOOR), headers);
  const own = await oneAtATime(path(OWN_DOOR), headers);
  // An empty answer would time nothing worth timing: about 900 can open the front door, 700 on a weekend or a night.
  if (front.items === 0 || own.items === 0) throw new Error(`the front door answered ${front.items} and the own door ${own.items} who can open them`);
  const p95 = percentile(front.samples, 95);
  const ownP95 = percentile(own.samples, 95);
  return [
    {
      name: `who can open this door now, one request at a time (front door, ${LOCKS.toLocaleString('en')} locks, ${RESIDENTS.toLocaleString('en')} residents)`,
      description:
        `GET /operatorapi/securedobjects/{id}/access?limit=1000 for the front door (about 900 who can open it), ${SEQUENTIAL_REQUESTS} ` +
        `requests one after another after ${SEQUENTIAL_WARMUP} unmeasured, to the last byte; p95 vs the own door's (10 tickets)`,
      serviceSeconds: round(p95 / 1000),
      baselineSeconds: round(ownP95 / 1000),
      reference: 'the own door (10 tickets), the same way',
      ratio: round(p95 / ownP95, 2),
      goalRatio: null,
      goalMet: p95 <= GOAL_P95_MS,
      details: {
        goal: `p95 <= ${GOAL_P95_MS} ms: ${p95 <= GOAL_P95_MS ? 'met' : 'NOT met'}`,
        p50Ms: round(median(front.samples), 1),
        p95Ms: round(p95, 1),
        p99Ms: round(percentile(front.samples, 99), 1),
        maxMs: round(Math.max(...front.samples), 1),
        items: front.items,
        ownDoorP50Ms: round(median(own.samples), 1),
        ownDoorP95Ms: round(ownP95, 1),
        requests: SEQUENTIAL_REQUESTS,
      },
    },
  ];
}

/** Run with the scale runs (bench/scenarios/index.ts); it seeds the tenant unless a row above already did. */
export const doorAccessScaleRuns: ScaleRun[] = [
  { name: 'who can open this door now, one request at a time', run: (context) => doorAccessOneAtATime(context) },
];
