// "Who can open this door" (docs/api-reference.md 13.2) in a tenant with 10,000 locks and 100,000 residents.
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { NEXT_CHANGE_SEQ_CTE } from '../../src/db/repositories/change-log.repo.js';
import type { Comparison, Scenario, ScenarioContext } from '../types.js';
import { operatorFixture, type OperatorFixture } from './fixtures.js';

const LOCKS = 10_000;
const RESIDENTS = 100_000;
/**
 * The shape of the seeded tenant: 100 buildings of 100 locks, 1,000 residents each, one phone per resident. Every
 * resident holds a ticket for its building's front door (the lock `door-{building × 100}`) and one for its own door;
 * one ticket in five has a weekday schedule in the lock's time zone, one in ten is revoked. So a front door has 1,000
 * tickets (about 900 live, some closed by their schedule), and the table 200,000.
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
  const { rows } = await client.query<{ last_seq: string }>(NEXT_CHANGE_SEQ_CTE('$1'), [tenant]);
  const seq = Number(rows[0]!.last_seq);
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
  // Two tickets per resident: its building's front door and its own door (both grant open), created in resident order.
  await client.query(
    `INSERT INTO tickets (id, tenant_id, secured_object_id, mobile_device_id, begin_date, end_date, created_at, commands,
                          channels, change_seq, schedule, revoked_at)
     SELECT gen_random_uuid(), $1,
            CASE WHEN k = 0 THEN 'door-' || ((g % $5::int) * ($6::int / $5::int)) ELSE 'door-' || (g % $6::int) END,
            'phone-' || g, 0, $2::bigint + 365::bigint * 86400000, $2::bigint + 2 * g + k, ARRAY['open'], ARRAY['btlespp'], $4::bigint,
            CASE WHEN g % 5 = 0 THEN '{"weekly":[{"days":["MO","TU","WE","TH","FR"],"from":"07:00","to":"19:00"}]}'::jsonb END,
            CASE WHEN g % 10 = 3 THEN $2::bigint END
       FROM generate_series(0, $3::int - 1) AS g, (VALUES (0), (1)) AS v (k)`,
    [tenant, now, RESIDENTS, seq, BUILDINGS, LOCKS],
  );
  await client.query('VACUUM (ANALYZE) secured_objects, mobile_devices, residents, resident_devices, tickets');
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
