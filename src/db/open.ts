// Opens the database the configuration names: PostgreSQL with DATABASE_URL, the embedded PGlite in DATA_DIR otherwise.
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Database } from './database.js';
import { createPgliteDatabase } from './pglite.js';
import { createPostgresDatabase } from './postgres.js';

export async function openDatabase(config: Config, log: Logger): Promise<Database> {
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
