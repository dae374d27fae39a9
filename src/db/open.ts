// Opens the database the configuration names: PostgreSQL with DATABASE_URL, the embedded PGlite in DATA_DIR otherwise.
import type { Logger } from 'pino';
import type { Database } from './database.js';
import { createPgliteDatabase } from './pglite.js';
import { createPostgresDatabase } from './postgres.js';

/**
 * The settings the database needs, named as the environment names them: a structural slice of the configuration, so
 * src/db depends on nothing above it (docs/house-style.md, "The shape").
 */
export interface DatabaseSettings {
  DATABASE_URL?: string | undefined;
  DB_POOL_MAX: number;
  DB_CONNECT_TIMEOUT_MS: number;
  DB_STATEMENT_TIMEOUT_MS: number;
  DATA_DIR: string;
}

export async function openDatabase(config: DatabaseSettings, log: Logger): Promise<Database> {
  if (config.DATABASE_URL) {
    return createPostgresDatabase({
      connectionString: config.DATABASE_URL,
      poolMax: config.DB_POOL_MAX,
      connectTimeoutMs: config.DB_CONNECT_TIMEOUT_MS,
      statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS,
      log,
    });
  }
  return createPgliteDatabase({ dataDir: config.DATA_DIR });
}
