// Baseline for issuing tickets: a bare Fastify route doing the service's INSERT INTO tickets on the run's database.
import { randomUUID } from 'node:crypto';
import { databaseBaseline } from './baseline-database.mjs';

const { pool, tenantId, app, listen } = await databaseBaseline('insert');

// tickets.change_seq is NOT NULL (migrations/005): an increasing number, as the service stamps; here from memory,
// since the service's per-tenant change counter is part of what the comparison is about, not of the bare INSERT.
let changeSeq = 0;

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
      tenantId,
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

await listen();
