// Runs once per test run: migrates a template database that every test file clones (PostgreSQL or PGlite).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { migrate } from '../../src/db/migrate.js';
import { createPgliteDatabase } from '../../src/db/pglite.js';
import { createPostgresDatabase } from '../../src/db/postgres.js';
import { createLogger } from '../../src/logger.js';
import { adminUrl, postgresTestUrl } from './postgres-url.js';

declare module 'vitest' {
  export interface ProvidedContext {
    pgTemplate: string;
    pgliteDump: string;
  }
}

export default async function setup(project: TestProject) {
  const url = postgresTestUrl();
  if (url) {
    const template = `acs_template_${process.pid}`;
    const admin = new pg.Client({ connectionString: adminUrl(url) });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${template}`);
    await admin.query(`CREATE DATABASE ${template}`);
    const db = createPostgresDatabase({
      connectionString: adminUrl(url, template),
      poolMax: 2,
      connectTimeoutMs: 5000,
      statementTimeoutMs: 60_000,
      log: createLogger('silent'),
    });
    await migrate(db);
    await db.close();
    project.provide('pgTemplate', template);
    project.provide('pgliteDump', '');
    return async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`).catch(() => undefined);
      await admin.end();
    };
  }
  const db = await createPgliteDatabase();
  await migrate(db);
  const dump = await db.dump();
  await db.close();
  const directory = mkdtempSync(join(tmpdir(), 'acs-test-'));
  const file = join(directory, 'template.tar');
  writeFileSync(file, Buffer.from(await dump.arrayBuffer()));
  project.provide('pgTemplate', '');
  project.provide('pgliteDump', file);
  return () => rmSync(directory, { recursive: true, force: true });
}
