// The OpenAPI documents the server serves, one per API: written to openapi/ and compared with it by a test.
import { randomBytes } from 'node:crypto';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { migrate } from '../src/db/migrate.js';
import { createPgliteDatabase } from '../src/db/pglite.js';
import { createLogger } from '../src/logger.js';
import type { Database } from '../src/db/database.js';
import { OPENAPI_DOCUMENTS } from './openapi-files.js';
import { secretsKeyOf } from '../src/shared/crypto.js';

/** Builds the app on `db` (a fresh in-memory database when none is given; the app closes it). */
export async function servedDocuments(given?: Database): Promise<Map<string, unknown>> {
  const db = given ?? (await createPgliteDatabase());
  await migrate(db);
  const app = await buildApp(loadConfig({ LOG_LEVEL: 'silent' }), {
    db,
    log: createLogger('silent'),
    secretsKey: secretsKeyOf(randomBytes(32)),
  });
  try {
    const documents = new Map<string, unknown>();
    for (const { file, path } of OPENAPI_DOCUMENTS) {
      const response = await app.inject({ method: 'GET', url: path });
      if (response.statusCode !== 200) throw new Error(`${path} answered ${response.statusCode}`);
      documents.set(file, response.json());
    }
    return documents;
  } finally {
    await app.close();
  }
}

export function formatDocument(document: unknown): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}
