// Scale run for access-log ingestion (docs/api-reference.md 8.5): 100 uploads of 1,000 entries through the server against a bare
// multi-row INSERT of the same rows into the same table, in the same run; timed one upload after another, median of the runs.
import type pg from 'pg';
import { clientToken, expectOk, median, round, scaleTenant, seedDevicesAndLocks, timed, type ScaleContext, type ScaleResult, type ScaleRun } from '../scale.js';

const UPLOADS = 100;
const ENTRIES_PER_UPLOAD = 1000;
/** Tickets of each lock the entries name in turn, so the server's phone look-up finds one for every entry. */
const TICKETS_PER_LOCK = 20;
const COLUMNS = [
  'tenant_id',
  'secured_object_id',
  'lock_registered_at',
  'entry_no',
  'lock_time',
  'token_id',
  'mobile_device_id',
  'command',
  'channel',
  'result',
  'reason',
  'received_at',
  'via',
  'clock_offset_ms',
  // The lock's own word, as the service stores an upload from the lock's client (migrations/021_signed_reports.sql).
  'numbering',
  'signed',
] as const;

interface Entry {
  entryNo: number;
  lockTime: number;
  tokenId: string;
  command: string;
  channel: string;
  result: 'granted' | 'denied';
  reason: string;
}

/** The entries of one upload, as a lock logs them: a decision every few seconds, one in ten denied. */
function uploadEntries(upload: number, tickets: string[], start: number): Entry[] {
  return Array.from({ length: ENTRIES_PER_UPLOAD }, (_, i) => {
    const entryNo = upload * ENTRIES_PER_UPLOAD + i + 1;
    const denied = entryNo % 10 === 0;
    return {
      entryNo,
      lockTime: start + entryNo * 3000,
      tokenId: tickets[entryNo % tickets.length]!,
      command: 'open',
      channel: 'btlespp',
      result: denied ? 'denied' : 'granted',
      reason: denied ? 'outside-schedule' : 'ok',
    };
  });
}

/** Locks and their tickets (phone `al-d{n}` for ticket n), straight into the tables. */
async function seedTickets(db: pg.Client, tenantId: string, lockId: string, now: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO tickets (id, tenant_id, secured_object_id, mobile_device_id, begin_date, end_date, created_at, commands, channels, change_seq)
     SELECT gen_random_uuid(), $1, $2, 'al-d' || n, 0, 4102444800000, $3::bigint, '{open}', '{btlespp}', 0
       FROM generate_series(1, $4) AS n ORDER BY n
     RETURNING id`,
    [tenantId, lockId, now, TICKETS_PER_LOCK],
  );
  return rows.map((row) => row.id);
}

/**
 * Each run: the bare side inserts every upload's rows, as the service stores them (phone, via, clock offset, received
 * time), with one `INSERT … VALUES (…), (…)` per upload on one connection; then the service takes the same uploads for
 * a lock of its own through its bound client, one POST after another. Both sides' rows are deleted after each run, so
 * every run meets a table of the same size.
 */
async function ingestion(context: ScaleContext, db: pg.Client): Promise<ScaleResult[]> {
  const tenant = await scaleTenant(context, db, `al-ingest-${process.pid}`);
  const tenantId = tenant.tenantId;
  const now = Date.now();
  await seedDevicesAndLocks(db, tenantId, 'al', TICKETS_PER_LOCK, 1, now);
  const lockId = 'al-l1';
  const tickets = await seedTickets(db, tenantId, lockId, now);
  const phoneOf = new Map(tickets.map((id, index) => [id, `al-d${index + 1}`]));
  await db.query('ANALYZE tickets');
  const client = JSON.parse(
    await context.cli(['client', 'create', '--tenant', tenant.credentials.tenant, '--scopes', 'sync', '--secured-object', lockId, '--json']),
  ) as { clientId: string; clientSecret: string };
  const headers = { authorization: `Bearer ${await clientToken(context, client.clientId, client.clientSecret)}` };
  const uploads = Array.from({ length: UPLOADS }, (_, upload) => uploadEntries(upload, tickets, now - 30 * 86_400_000));

  /** The bare side's rows of one upload, for a lock id the service never sees. */
  const bareInsert = (entries: Entry[], receivedAt: number) => {
    const params: unknown[] = [];
    const tuples = entries.map((entry) => {
      params.push(tenantId, 'al-bare', now, entry.entryNo, entry.lockTime, entry.tokenId, phoneOf.get(entry.tokenId), entry.command, entry.channel, entry.result, entry.reason, receivedAt, 'lock', 1500, 'lock', true);
      const base = params.length - COLUMNS.length;
      return `(${COLUMNS.map((_, i) => `$${base + i + 1}`).join(', ')})`;
    });
    return db.query(`INSERT INTO access_log_entries (${COLUMNS.join(', ')}) VALUES ${tuples.join(', ')}`, params);
  };
  const clearRows = async () => {
    await db.query("DELETE FROM access_log_entries WHERE tenant_id = $1 AND secured_object_id IN ('al-bare', $2)", [tenantId, lockId]);
    await db.query('UPDATE lock_telemetry SET log_high = NULL WHERE tenant_id = $1', [tenantId]);
  };

  // An untimed round first warms both sides up (the service's validators and plans, the baseline's connection).
  const service: number[] = [];
  const bare: number[] = [];
  let accepted = 0;
  for (let run = 0; run <= context.runs; run++) {
    const reference = await timed(async () => {
      for (const entries of uploads) await bareInsert(entries, Date.now());
    });
    const stored = await timed(async () => {
      let sum = 0;
      for (const entries of uploads) {
        const response = await expectOk(
          context,
          { method: 'POST', path: `/deviceapi/securedobjects/${lockId}/accesslog`, headers, body: { lockTime: Date.now() + 1500, entries } },
          200,
        );
        sum += (response.body as { accepted: number }).accepted;
      }
      return sum;
    });
    const { rows } = await db.query<{ n: number; phones: number }>(
      'SELECT count(*)::int AS n, count(mobile_device_id)::int AS phones FROM access_log_entries WHERE tenant_id = $1 AND secured_object_id = $2',
      [tenantId, lockId],
    );
    if (stored.value !== UPLOADS * ENTRIES_PER_UPLOAD || rows[0]!.n !== stored.value || rows[0]!.phones !== stored.value) {
      throw new Error(`the service stored ${rows[0]!.n} rows (${rows[0]!.phones} with a phone), answered ${stored.value} accepted`);
    }
    accepted = stored.value;
    await clearRows();
    if (run === 0) continue;
    bare.push(reference.seconds);
    service.push(stored.seconds);
  }

  const rows = UPLOADS * ENTRIES_PER_UPLOAD;
  const serviceSeconds = median(service);
  const bareSeconds = median(bare);
  const list = (values: number[]) => values.map((value) => round(value * 1000, 0)).join('/');
  return [
    {
      name: 'access log: ingest 100 uploads of 1,000 entries',
      description:
        'POST /deviceapi/securedobjects/{id}/accesslog 100 times one after another (1,000 entries each, the lock\'s bound client) ' +
        'vs 100 bare multi-row INSERTs of the same rows into access_log_entries; goal >= 0.5x the bare rows/s (seconds ratio <= 2)',
      serviceSeconds: round(serviceSeconds),
      baselineSeconds: round(bareSeconds),
      ratio: round(serviceSeconds / bareSeconds, 2),
      goalRatio: 2,
      goalMet: serviceSeconds / bareSeconds <= 2,
      details: {
        runs: context.runs,
        rows,
        accepted,
        serviceRowsPerSecond: Math.round(rows / serviceSeconds),
        bareRowsPerSecond: Math.round(rows / bareSeconds),
        throughputRatio: round(bareSeconds / serviceSeconds, 2),
        serviceSamplesMs: list(service),
        bareSamplesMs: list(bare),
      },
    },
  ];
}

export const accessLogScaleRuns: ScaleRun[] = [{ name: 'access log: ingest 100 uploads of 1,000 entries', run: ingestion }];
