// Baseline for reading a ticket: a bare Fastify route doing the service's SELECT of one ticket by tenant and id, as
// a named prepared statement (as the service runs it), on the run's database. It is the ceiling of any route that
// answers from PostgreSQL on this machine: the service's GET /operatorapi/tickets/{id} adds the bearer check, the
// rate limit, metrics, request ids and the derived status on top.
import process from 'node:process';
import { databaseBaseline } from './baseline-database.mjs';

const ticketId = process.env.TICKET_ID;
if (!ticketId) throw new Error('TICKET_ID is required');

const { pool, tenantId, app, listen } = await databaseBaseline('select');

// One ticket of its own, read on every request.
await pool.query(
  `INSERT INTO tickets (id, tenant_id, secured_object_id, mobile_device_id, begin_date, end_date, created_at, commands,
                        channels, change_seq)
   VALUES ($1, $2, 'BENCH', 'bench-device', 0, $3, $4, '{open}', '{btlespp}', 1)`,
  [ticketId, tenantId, Date.now() + 365 * 24 * 3600_000, Date.now()],
);

app.get('/tickets/:id', async (request, reply) => {
  const { rows } = await pool.query({
    name: 'baseline-select-ticket',
    text: `SELECT id, tenant_id, secured_object_id, mobile_device_id, begin_date, end_date, created_at, commands, channels,
                  revoked_at, downloaded_at, access_permission_id
             FROM tickets WHERE tenant_id = $1 AND id = $2`,
    values: [tenantId, request.params.id],
  });
  if (rows.length === 0) return reply.code(404).send({ status: 404 });
  return rows[0];
});

await listen();
