// The committed OpenAPI documents in openapi/ equal what the server serves (docs/api-reference.md 1: they are kept equal).
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatDocument, servedDocuments } from '../scripts/openapi-documents.js';
import { OPENAPI_DOCUMENTS } from '../scripts/openapi-files.js';
import { buildTestApp, type TestApp } from './helpers/app.js';
import { createTestDatabase } from './helpers/database.js';

type Operation = Record<string, unknown> & { security?: Record<string, string[]>[]; responses?: Record<string, unknown> };
type Paths = Record<string, Record<string, Operation>>;

const pathsOf = (document: unknown) => (document as { paths: Paths }).paths;

describe('OpenAPI documents', () => {
  let served: Map<string, unknown>;
  let t: TestApp;
  beforeAll(async () => {
    served = await servedDocuments((await createTestDatabase()).db);
    t = await buildTestApp();
  });
  afterAll(async () => {
    await t.app.close();
  });

  it('match the committed files (run `npm run openapi` after changing a route)', async () => {
    expect([...served.keys()]).toEqual(['operatorapi.json', 'accessapi.json', 'deviceapi.json', 'oauth.json']);
    for (const { file } of OPENAPI_DOCUMENTS) {
      const committed = readFileSync(new URL(`../openapi/${file}`, import.meta.url), 'utf8');
      expect(formatDocument(served.get(file)), `openapi/${file} is stale: run npm run openapi`).toBe(committed);
    }
  });

  /** The API operations without a bearer token. */
  const PUBLIC_OPERATIONS = new Set(['GET /deviceapi/claims/{code}', 'POST /deviceapi/claims/{code}']);

  it('describe every API operation with an id, a summary, a description, security and its responses', async () => {
    for (const [file, document] of served) {
      if (file === 'oauth.json') continue; // the next test holds the OAuth document to its own rules
      const paths = pathsOf(document);
      expect(Object.keys(paths).length).toBeGreaterThan(0);
      for (const [path, operations] of Object.entries(paths)) {
        for (const [method, operation] of Object.entries(operations)) {
          const where = `${method.toUpperCase()} ${path}`;
          expect(operation.operationId, where).toEqual(expect.any(String));
          expect(operation.summary, where).toEqual(expect.any(String));
          expect(operation.description, where).toEqual(expect.any(String));
          // A claim link's code is its own credential (docs/api-reference.md 12): those two operations take no token.
          if (PUBLIC_OPERATIONS.has(where)) {
            expect(operation.security, where).toEqual([]);
            expect(Object.keys(operation.responses as object), where).toEqual(expect.arrayContaining(['404', '410', '429']));
            continue;
          }
          expect(operation.security, where).toEqual([{ bearer: [expect.any(String)] }]);
          expect(Object.keys(operation.responses as object), where).toEqual(expect.arrayContaining(['401', '403']));
        }
      }
    }
  });

  it('describe the OAuth endpoints: client authentication on the forms, none on discovery, RFC 6749 errors', () => {
    const paths = pathsOf(served.get('oauth.json'));
    const forms = ['POST /oauth/token', 'POST /oauth2/token', 'POST /oauth/revoke', 'POST /oauth/introspect'];
    const discovery = ['GET /.well-known/oauth-authorization-server', 'GET /.well-known/jwks.json', 'GET /tenants/{tenant}/jwks.json'];
    // docs/api-reference.md 13: the console's sign-in, a browser's page and form, with no client authentication.
    const signIn = ['GET /oauth/authorize', 'POST /oauth/authorize'];
    const documented = Object.entries(paths).flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`));
    expect(documented.sort()).toEqual([...forms, ...discovery, ...signIn].sort());
    for (const where of forms) {
      const [method, path] = where.split(' ') as [string, string];
      const operation = paths[path]![method.toLowerCase()]!;
      expect(operation.security, where).toEqual([{ clientSecretBasic: [] }, {}]);
      expect(Object.keys(operation.responses!), where).toEqual(expect.arrayContaining(['200', '400', '401', '413', '429', '500', '503']));
      const invalidClient = operation.responses!['401'] as { content: Record<string, { schema: unknown }>; headers: Record<string, unknown> };
      expect(invalidClient.content['application/json']!.schema, where).toEqual({ $ref: '#/components/schemas/OAuthError' });
      expect(Object.keys(invalidClient.headers), where).toContain('WWW-Authenticate');
    }
    for (const where of [...discovery, ...signIn]) {
      const [method, path] = where.split(' ') as [string, string];
      expect(paths[path]![method.toLowerCase()]!.security, where).toEqual([]);
    }
    const token = paths['/oauth/token']!.post as { requestBody: { content: Record<string, { schema: unknown }> } };
    expect(Object.keys(token.requestBody.content)).toEqual(['application/x-www-form-urlencoded']);
    const schemas = (served.get('oauth.json') as { components: { schemas: Record<string, { properties: Record<string, { enum?: string[] }> }> } })
      .components.schemas;
    expect(schemas.TokenRequest!.properties.grant_type!.enum).toEqual(['authorization_code', 'client_credentials', 'password', 'refresh_token']);
    expect(Object.keys(schemas.TokenRequest!.properties)).toEqual(
      expect.arrayContaining(['grant_type', 'scope', 'username', 'password', 'refresh_token', 'client_id', 'client_secret']),
    );
  });

  it('document only operations the server has, each at its documented path and method', () => {
    for (const [file, document] of served) {
      for (const [path, operations] of Object.entries(pathsOf(document))) {
        for (const method of Object.keys(operations)) {
          const url = path.replace(/\{([^}]+)\}/g, ':$1');
          expect(t.app.hasRoute({ method: method.toUpperCase() as 'GET', url }), `${file}: ${method.toUpperCase()} ${path}`).toBe(true);
        }
      }
    }
  });
});
