// Baseline for issuing tickets: a bare Fastify route doing the service's INSERT INTO tickets on the run's database.
import { randomUUID } from 'node:crypto';
import process from 'node:process';
import Fastify from 'fastify';
import pg from 'pg';

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) throw new Error('DATABASE_URL is required');

// PostgreSQL bigint (ms timestamps) as numbers, as the service reads them.
pg.types.setTypeParser(20, (value) => Number(value));
// The service's default pool size (DB_POOL_MAX=10), or the size the run gives the service.
const pool = new pg.Pool({ connectionString: databaseUrl, max: Number(process.env.DB_POOL_MAX || 10) });

// tickets has a foreign key to tenants only: one tenant of its own, so nothing else needs to exist.
const {
  rows: [tenant],
} = await pool.query('INSERT INTO tenants (name, created_at) VALUES ($1, $2) RETURNING id', [
  `bench-baseline-insert-${process.pid}`,
  Date.now(),
]);

// tickets.change_seq is NOT NULL (migrations/005): an increasing number, as the service stamps; here from memory,
// since the service's per-tenant change counter is part of what the comparison is about, not of the bare INSERT.
let changeSeq = 0;

const app = Fastify({ logger: false });

app.get('/', async () => ({ ready: true }));

app.post('/tickets', async (request, reply) => {
  const body = request.body;
  const { rows } = await pool.query(
    `INSERT INTO tickets (id, tenant_id, secured_object_id, mobile_device_id, begin_date, end_date, created_at, commands,
                          channels, change_seq)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
     RETURNING id, tenant_id, secured_object_id, mobile_device_id, begin_date, end_date, created_at, commands, channels,
               revoked_at, downloaded_at`,
    [
      randomUUID(),
      tenant.id,
      body.securedObjectId,
      body.mobileDeviceId,
      body.beginDate,
      body.endDate,
      Date.now(),
      body.commands,
      body.channels,
      ++changeSeq,
    ],
  );
  return reply.code(201).send(rows[0]);
});

// The bench stops its children with SIGTERM; a terminal ctrl-c sends SIGINT to the whole group.
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.once(signal, () => {
    app
      .close()
      .then(() => pool.end())
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
  });
}

await app.listen({ port: Number(process.env.PORT ?? 3000), host: process.env.HOST ?? '127.0.0.1' });
