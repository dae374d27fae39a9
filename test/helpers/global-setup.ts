// Runs once per test run: builds dist/ and migrates a template database that every test file clones (PostgreSQL
// or PGlite); on Citus it only checks the cluster.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { migrate } from '../../src/db/migrate.js';
import { createPgliteDatabase } from '../../src/db/pglite.js';
import { createPostgresDatabase } from '../../src/db/postgres.js';
import { createLogger } from '../../src/logger.js';
import { checkCitusCluster, citusTestUrl } from './citus.js';
import { adminUrl, postgresTestUrl } from './postgres-url.js';
import { ROOT } from './process.js';

declare module 'vitest' {
  export interface ProvidedContext {
    pgTemplate: string;
    pgliteDump: string;
  }
}

export default async function setup(project: TestProject) {
  // Tests run `npm start`, `npm run cli` and `npm run simulate`, whose pre-scripts compile dist/ when a source is newer
  // than its last build (scripts/build-if-stale.mjs). The same check here, once, so those find dist/ current and two
  // test files never write it at the same time.
  execFileSync(process.execPath, ['scripts/build-if-stale.mjs'], { cwd: ROOT, stdio: 'inherit' });
  // Always: PGlite runs clone it, and spawned servers and CLI runs on an embedded DATA_DIR are seeded from it.
  const directory = mkdtempSync(join(tmpdir(), 'acs-test-'));
  const removeDirectory = () => rmSync(directory, { recursive: true, force: true });
  const file = join(directory, 'template.tar');
  const pglite = await createPgliteDatabase();
  await migrate(pglite);
  writeFileSync(file, Buffer.from(await (await pglite.dump()).arrayBuffer()));
  await pglite.close();
  project.provide('pgliteDump', file);

  const citus = citusTestUrl();
  if (citus) {
    // On Citus each file makes its own distributed database (helpers/citus.ts); a template would not be distributed.
    const workers = await checkCitusCluster(citus);
    process.stderr.write(`Tests on the Citus coordinator ${new URL(citus).host} with ${workers} workers: one distributed database per file.\n`);
    project.provide('pgTemplate', '');
    return removeDirectory;
  }
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
    return async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`).catch(() => undefined);
      await admin.end();
      removeDirectory();
    };
  }
  project.provide('pgTemplate', '');
  return removeDirectory;
}
