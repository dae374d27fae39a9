// The committed OpenAPI documents in openapi/ equal what the server serves (DEVELOPERS.md: docs are part of the work).
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { formatDocument, servedDocuments } from '../scripts/openapi-documents.js';
import { OPENAPI_DOCUMENTS } from '../scripts/openapi-files.js';
import { createTestDatabase } from './helpers/database.js';

describe('OpenAPI documents', () => {
  let served: Map<string, unknown>;
  beforeAll(async () => {
    served = await servedDocuments((await createTestDatabase()).db);
  });

  it('match the committed files (run `npm run openapi` after changing a route)', async () => {
    for (const { file } of OPENAPI_DOCUMENTS) {
      const committed = readFileSync(new URL(`../openapi/${file}`, import.meta.url), 'utf8');
      expect(formatDocument(served.get(file)), `openapi/${file} is stale: run npm run openapi`).toBe(committed);
    }
  });

  it('describe every operation with an id, a summary, a description, security and its responses', async () => {
    for (const document of served.values()) {
      const paths = (document as { paths: Record<string, Record<string, Record<string, unknown>>> }).paths;
      expect(Object.keys(paths).length).toBeGreaterThan(0);
      for (const [path, operations] of Object.entries(paths)) {
        for (const [method, operation] of Object.entries(operations)) {
          const where = `${method.toUpperCase()} ${path}`;
          expect(operation.operationId, where).toEqual(expect.any(String));
          expect(operation.summary, where).toEqual(expect.any(String));
          expect(operation.description, where).toEqual(expect.any(String));
          expect(operation.security, where).toEqual([{ bearer: [expect.any(String)] }]);
          expect(Object.keys(operation.responses as object), where).toEqual(expect.arrayContaining(['401', '403']));
        }
      }
    }
  });
});
