// Scenarios for keyset pages: the same page of 100 tickets from the middle of 10k, then of 1M tickets.
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { NEXT_CHANGE_SEQ_CTE } from '../../src/db/repositories/change-log.repo.js';
import type { Comparison, Scenario, ScenarioContext } from '../types.js';
import { operatorFixture, type OperatorFixture } from './fixtures.js';

const SMALL = 10_000;
const LARGE = 1_000_000;
/**
 * Tickets are seeded at positions 0 … LARGE-1 (created_at = base + position). The SMALL set sits in the middle,
 * so the rows added later go half before and half after it: the cursor taken from the middle of the SMALL set is
 * then the middle of the LARGE set too, and both rows fetch the very same 100 tickets.
 */
const SMALL_FROM = (LARGE - SMALL) / 2;
const WALK_PAGE = 1000;

interface PagesFixture {
  fixture: OperatorFixture;
  /** created_at of position 0. */
  base: number;
  /** The cursor of the SMALL set's middle, as the API's `Link` header gave it. */
  cursor: string;
}

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

/** Like every ticket write of the service, a seeding takes the tenant's next change number (migrations/005). */
async function nextChangeSeq(client: pg.Client, tenantId: string): Promise<number> {
  const { rows } = await client.query<{ last_seq: string }>(NEXT_CHANGE_SEQ_CTE('$1'), [tenantId]);
  return Number(rows[0]!.last_seq);
}

/** Positions first … last (inclusive), set-based in one statement, stamped with change number `seq`. */
async function seed(
  client: pg.Client,
  pages: Omit<PagesFixture, 'cursor'>,
  first: number,
  last: number,
  seq: number,
): Promise<void> {
  const { fixture, base } = pages;
  await client.query(
    `INSERT INTO tickets (id, tenant_id, secured_object_id, mobile_device_id, begin_date, end_date, created_at, commands,
                          channels, change_seq)
     SELECT gen_random_uuid(), $1, $2, $3, 0, $4::bigint, $5::bigint + g, ARRAY['open'], ARRAY['btlespp'], $8::bigint
       FROM generate_series($6::bigint, $7::bigint) AS g`,
    [
      fixture.tenantId,
      fixture.securedObjectId,
      fixture.mobileDeviceId,
      Date.now() + 365 * 24 * 3600_000,
      base,
      first,
      last,
      seq,
    ],
  );
}

function seconds(since: number): string {
  return ((performance.now() - since) / 1000).toFixed(1);
}

/**
 * Leaves the table as a settled production table would be: statistics current (ANALYZE), the visibility map set
 * (so autovacuum's insert threshold does not start a vacuum during the next row) and the dirty pages written out.
 */
async function settle(client: pg.Client): Promise<void> {
  await client.query('VACUUM (ANALYZE) tickets');
  // Needs superuser or pg_checkpoint; without, the checkpointer writes the pages out on its own schedule.
  await client.query('CHECKPOINT').catch(() => undefined);
}

async function ticketCount(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ count: string }>('SELECT count(*) FROM tickets');
  return Number(rows[0]!.count);
}

/** The `cursor` of a `Link: <…>; rel="next"` header. */
function nextCursor(link: string | null): string {
  const target = link ? /<([^>]*)>\s*;\s*rel="next"/.exec(link)?.[1] : undefined;
  const cursor = target ? new URL(target, 'http://placeholder').searchParams.get('cursor') : null;
  if (!cursor) throw new Error(`expected a Link to the next page, got ${JSON.stringify(link)}`);
  return cursor;
}

let small: Promise<PagesFixture> | null = null;

/** Once per run: the tenant, SMALL tickets as the table's only ones, and the cursor of their middle. */
function seedSmall(context: ScenarioContext): Promise<PagesFixture> {
  small ??= (async () => {
    const fixture = await operatorFixture(context, 'bench-ticket-pages');
    const pages = { fixture, base: Date.now() - 2 * LARGE };
    const started = performance.now();
    const count = await withClient(context.databaseUrl, async (client) => {
      // Tickets of earlier rows (other tenants) go, so that the table holds exactly what this pair says.
      await client.query('DELETE FROM tickets');
      await seed(client, pages, SMALL_FROM, SMALL_FROM + SMALL - 1, await nextChangeSeq(client, fixture.tenantId));
      await settle(client);
      return ticketCount(client);
    });
    log(`seeded ${SMALL} tickets and settled the table in ${seconds(started)} s (table: ${count})`);

    // Through the API, as a client would: page after page of WALK_PAGE up to the middle.
    let cursor: string | undefined;
    for (let walked = 0; walked < SMALL / 2; walked += WALK_PAGE) {
      const response = await context.request({
        url: context.appUrl,
        method: 'GET',
        path: `/operatorapi/tickets?limit=${WALK_PAGE}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        headers: fixture.headers,
      });
      if (response.status !== 200) throw new Error(`walking the pages answered ${response.status}: ${JSON.stringify(response.body)}`);
      cursor = nextCursor(response.headers.get('link'));
    }
    return { ...pages, cursor: cursor! };
  })();
  return small;
}

function pagePath(cursor: string): string {
  return `/operatorapi/tickets?limit=100&cursor=${encodeURIComponent(cursor)}`;
}

const SMALL_NAME = 'GET /operatorapi/tickets?limit=100&cursor=mid (10k)';
const LARGE_NAME = 'GET /operatorapi/tickets?limit=100&cursor=mid (1M)';

/** Keep this order (and these rows after every row that inserts tickets): the SMALL set-up empties the table. */
export const ticketPageScenarios: Scenario[] = [
  {
    name: SMALL_NAME,
    method: 'GET',
    path: '/operatorapi/tickets?limit=100&cursor={middle}',
    baseline: 'hello',
    async setup(context) {
      const { fixture, cursor } = await seedSmall(context);
      return { path: pagePath(cursor), headers: fixture.headers };
    },
  },
  {
    name: LARGE_NAME,
    method: 'GET',
    path: '/operatorapi/tickets?limit=100&cursor={middle}',
    baseline: 'hello',
    async setup(context) {
      // Alone (BENCH_ONLY), it seeds the SMALL set first: the rows are the same either way.
      const pages = await seedSmall(context);
      const started = performance.now();
      const seq = await withClient(context.databaseUrl, (client) => nextChangeSeq(client, pages.fixture.tenantId));
      // The two halves at once, on two connections, so that both cores work on them.
      await Promise.all([
        withClient(context.databaseUrl, (client) => seed(client, pages, 0, SMALL_FROM - 1, seq)),
        withClient(context.databaseUrl, (client) => seed(client, pages, SMALL_FROM + SMALL, LARGE - 1, seq)),
      ]);
      const inserted = seconds(started);
      const count = await withClient(context.databaseUrl, async (client) => {
        await settle(client);
        return ticketCount(client);
      });
      log(`seeded ${LARGE - SMALL} more tickets in ${inserted} s (${seconds(started)} s with VACUUM and CHECKPOINT; table: ${count})`);
      return { path: pagePath(pages.cursor), headers: pages.fixture.headers };
    },
  },
];

export const ticketPageComparisons: Comparison[] = [
  {
    name: 'page of 100, p50 at 1M / p50 at 10k tickets',
    numerator: LARGE_NAME,
    denominator: SMALL_NAME,
    goalAtMost: 1.3,
  },
];
