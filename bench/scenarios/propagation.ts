// Scenarios for revocation propagation (docs/api-reference.md 8.4): a lock's `pendingRevocations` with 100k tickets, read against a single-row read in the same run.
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { NEXT_CHANGE_SEQ_CTE } from '../../src/db/repositories/change-log.repo.js';
import { findSecuredObjectWithPropagation } from '../../src/db/repositories/secured-object.repo.js';
import type { Comparison, Scenario, ScenarioContext } from '../types.js';
import { operatorFixture, type OperatorFixture } from './fixtures.js';

const TICKETS = 100_000;
/** Revoked with a credential alive and not yet applied by the lock: what `pendingRevocations` counts. */
const PENDING = 20;
const DAY_MS = 24 * 3600_000;

interface PropagationFixture {
  fixture: OperatorFixture;
  /** A ticket of the lock, for the single-row read. */
  ticketId: string;
}

function log(message: string): void {
  process.stderr.write(`[bench] ${message}\n`);
}

async function nextChangeSeq(client: pg.Client, tenantId: string): Promise<number> {
  const { rows } = await client.query<{ last_seq: string }>(NEXT_CHANGE_SEQ_CTE('$1'), [tenantId]);
  return Number(rows[0]!.last_seq);
}

/**
 * The plan of the read `GET /operatorapi/securedobjects/{id}` runs (the lock with its count), through the repository's
 * own statement: it is run under EXPLAIN (ANALYZE, BUFFERS) and the plan is logged (the count should be an index range
 * on tickets_pending_revocations_idx, never a scan of the lock's 100k tickets).
 */
async function logPlan(client: pg.Client, tenantId: string, securedObjectId: string): Promise<void> {
  const plans: string[] = [];
  const explaining = {
    async query<Row>(text: string, params?: readonly unknown[]) {
      const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, params as unknown[]);
      plans.push(rows.map((row) => row['QUERY PLAN']).join('\n'));
      // No row: the repository answers null, and nothing is mapped.
      return { rows: [] as Row[], rowCount: 0 };
    },
  };
  // The margin bound as the default CREDENTIAL_MAX_LIFETIME (7 days) sets it; the plan does not depend on it.
  await findSecuredObjectWithPropagation(explaining as never, tenantId, securedObjectId, Date.now(), 604_800_000);
  log(`plan of the pendingRevocations read:\n${plans.join('\n')}`);
}

let seeded: Promise<PropagationFixture> | null = null;

/**
 * Once per run: a lock with 100,000 tickets, all downloaded: every tenth revoked and applied by the lock, every tenth
 * (another tenth) revoked long enough ago that its credential expired unapplied (still in the pending-revocations index,
 * outside its range), PENDING revoked with a live credential and not applied; the lock's telemetry says it applied
 * everything before those. Seeded set-based, change numbers taken with the service's own statement, then settled.
 */
function seed(context: ScenarioContext): Promise<PropagationFixture> {
  seeded ??= (async () => {
    const fixture = await operatorFixture(context, 'bench-propagation');
    const client = new pg.Client({ connectionString: context.databaseUrl });
    await client.connect();
    try {
      const started = performance.now();
      const now = Date.now();
      const history = await nextChangeSeq(client, fixture.tenantId);
      const pending = await nextChangeSeq(client, fixture.tenantId);
      await client.query(
        `INSERT INTO tickets (id, tenant_id, secured_object_id, mobile_device_id, begin_date, end_date, created_at, commands,
                              channels, change_seq, downloaded_at, revoked_at, credential_expires_at, revocation_applied_at)
         SELECT gen_random_uuid(), $1, $2, $3, 0, $4::bigint + 30 * ${DAY_MS}::bigint, $4::bigint - g, '{open}', '{btlespp}',
                -- Revocations the lock has not applied come after its applied position; the rest at or before it.
                CASE WHEN g <= $6 OR g % 10 = 5 THEN $8::bigint ELSE $7::bigint END,
                $4::bigint - 8 * ${DAY_MS}::bigint,
                CASE WHEN g <= $6 OR g % 10 IN (0, 5) THEN $4::bigint - 3600000 END,
                CASE WHEN g > $6 AND g % 10 = 5 THEN $4::bigint - ${DAY_MS}::bigint ELSE $4::bigint + 7 * ${DAY_MS}::bigint END,
                CASE WHEN g > $6 AND g % 10 = 0 THEN $4::bigint - 1800000 END
           FROM generate_series(1, $5::int) AS g`,
        [fixture.tenantId, fixture.securedObjectId, fixture.mobileDeviceId, now, TICKETS, PENDING, history, pending],
      );
      await client.query(
        `INSERT INTO lock_telemetry (tenant_id, secured_object_id, last_seen_at, applied_through) VALUES ($1, $2, $3, $4)`,
        [fixture.tenantId, fixture.securedObjectId, now, history],
      );
      await client.query('VACUUM (ANALYZE) tickets');
      await client.query('VACUUM (ANALYZE) lock_telemetry');
      await client.query('CHECKPOINT').catch(() => undefined);
      const { rows } = await client.query<{ id: string }>(
        'SELECT id FROM tickets WHERE tenant_id = $1 AND secured_object_id = $2 AND revoked_at IS NULL LIMIT 1',
        [fixture.tenantId, fixture.securedObjectId],
      );
      log(`seeded ${TICKETS} tickets of one lock (${PENDING} pending revocations) in ${((performance.now() - started) / 1000).toFixed(1)} s`);
      await logPlan(client, fixture.tenantId, fixture.securedObjectId);
      return { fixture, ticketId: rows[0]!.id };
    } finally {
      await client.end().catch(() => undefined);
    }
  })();
  return seeded;
}

const LOCK_READ = 'GET /operatorapi/securedobjects/{id} (100k tickets, pendingRevocations)';
const TICKET_READ = 'GET /operatorapi/tickets/{id} (beside the 100k-ticket lock)';

export const propagationScenarios: Scenario[] = [
  {
    name: LOCK_READ,
    method: 'GET',
    path: '/operatorapi/securedobjects/{id}',
    baseline: 'hello',
    async setup(context) {
      const { fixture } = await seed(context);
      const body = (
        await context.request({ url: context.appUrl, method: 'GET', path: `/operatorapi/securedobjects/${fixture.securedObjectId}`, headers: fixture.headers })
      ).body as { pendingRevocations?: number };
      if (body.pendingRevocations !== PENDING) throw new Error(`pendingRevocations is ${body.pendingRevocations}, not ${PENDING}`);
      return { path: `/operatorapi/securedobjects/${fixture.securedObjectId}`, headers: fixture.headers };
    },
  },
  {
    // The reference for the one above: a single-row read of the same tenant and table, measured in the same run.
    name: TICKET_READ,
    method: 'GET',
    path: '/operatorapi/tickets/{id}',
    baseline: 'hello',
    async setup(context) {
      const { fixture, ticketId } = await seed(context);
      return { path: `/operatorapi/tickets/${ticketId}`, headers: fixture.headers };
    },
  },
];

export const propagationComparisons: Comparison[] = [
  {
    name: 'pendingRevocations of a lock with 100k tickets, p50 / p50 of a single-row read',
    numerator: LOCK_READ,
    denominator: TICKET_READ,
    goalAtMost: 2,
  },
];
