// What the database-bound baselines share: a pg Pool like the service's on the run's database, a tenant of their
// own, a bare Fastify app with a readiness route, and a clean stop on the signals the bench sends.
import process from 'node:process';
import Fastify from 'fastify';
import pg from 'pg';
import { exitOnSignals } from './baseline-shutdown.mjs';

/** The pool, the baseline's own tenant id and the app to add its one route to; `listen()` serves it. */
export async function databaseBaseline(name) {
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
    `bench-baseline-${name}-${process.pid}`,
    Date.now(),
  ]);

  const app = Fastify({ logger: false });
  app.get('/', async () => ({ ready: true }));

  async function listen() {
    exitOnSignals(() => app.close().then(() => pool.end()));
    await app.listen({ port: Number(process.env.PORT ?? 3000), host: process.env.HOST ?? '127.0.0.1' });
  }

  return { pool, tenantId: tenant.id, app, listen };
}
