// Builds the app on a fresh database for a test file; `app.inject` talks to it without a socket.
import { Writable } from 'node:stream';
import { buildApp, type App } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { createTestDatabase, type TestDatabase } from './database.js';

export interface TestApp {
  app: App;
  config: Config;
  database: TestDatabase;
  /** Every log line the app wrote, for asserting that no secret reaches the logs. */
  logLines: string[];
  close(): Promise<void>;
}

export async function buildTestApp(env: Record<string, string> = {}): Promise<TestApp> {
  const database = await createTestDatabase();
  const config = loadConfig({ LOG_LEVEL: 'info', PUBLIC_URL: 'http://issuer.test', ...env });
  const logLines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, callback) {
      logLines.push(String(chunk));
      callback();
    },
  });
  const app = await buildApp(config, { db: database.db, log: createLogger(config.LOG_LEVEL, sink) });
  await app.ready();
  return { app, config, database, logLines, close: () => app.close() };
}
