// The committed OpenAPI documents (openapi/*.json) lint clean and meet the bar a generated client and a reader of
// Swagger UI need: stable operation ids, prose, every answer a route can give with its schema and headers, an example
// of every request body, and scopes that exist. test/openapi.test.ts keeps the files equal to what the server serves.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { OPENAPI_DOCUMENTS, readCommittedDocument } from '../../scripts/openapi-files.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const REDOCLY = join(ROOT, 'node_modules/.bin/redocly');
const CONFIG = join(ROOT, 'redocly.yaml');

interface MediaType {
  schema?: { example?: unknown; examples?: unknown[]; $ref?: string };
  example?: unknown;
  examples?: Record<string, unknown>;
}

interface Response {
  description?: string;
  headers?: Record<string, { description?: string; schema?: object }>;
  content?: Record<string, MediaType>;
}

interface Operation {
  operationId?: string;
  summary?: string;
  description?: string;
  parameters?: { in: string; name: string }[];
  requestBody?: { content?: Record<string, MediaType> };
  responses?: Record<string, Response>;
  security?: Record<string, string[]>[];
}

interface OpenApiDocument {
  security?: Record<string, string[]>[];
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, { example?: unknown; examples?: unknown[] }>; securitySchemes?: Record<string, { type: string; flows?: Record<string, { scopes?: Record<string, string> }> }> };
}

/**
 * What anyone may read without credentials (RFC 8414, RFC 7517): the metadata and the key sets; the console's
 * sign-in page and form (docs/api-reference.md 13), where a browser arrives before anyone is authenticated; and a
 * claim link's look-up and redemption, whose code is its own credential (docs/api-reference.md 12.2).
 */
const PUBLIC_OPERATIONS = new Set([
  'GET /.well-known/oauth-authorization-server',
  'GET /.well-known/jwks.json',
  'GET /tenants/{tenant}/jwks.json',
  'GET /deviceapi/claims/{code}',
  'POST /deviceapi/claims/{code}',
  'GET /oauth/authorize',
  'POST /oauth/authorize',
]);

/** The errors of the OAuth document's operations that read no form (routes/oauth/index.ts, routes/oauth/tenant-jwks.ts). */
const OAUTH_ERRORS: Record<string, string[]> = {
  'GET /.well-known/oauth-authorization-server': ['429', '500'],
  'GET /.well-known/jwks.json': ['429', '500'],
  'GET /tenants/{tenant}/jwks.json': ['400', '404', '414', '500', '503'],
  // Pages, not forms of a client: no client authentication, so no 401.
  'GET /oauth/authorize': ['400', '429', '500', '503'],
  'POST /oauth/authorize': ['400', '403', '413', '429', '500', '503'],
};

const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

function operationsOf(document: OpenApiDocument): { where: string; method: string; path: string; operation: Operation }[] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.has(method))
      .map(([method, operation]) => ({ where: `${method.toUpperCase()} ${path}`, method, path, operation })),
  );
}

const isJson = (mediaType: string) => /^application\/(.+\+)?json$/.test(mediaType);
const nonEmpty = (text: unknown) => typeof text === 'string' && text.trim().length > 0;

interface LintProblem {
  ruleId: string;
  severity: string;
  message: string;
  location?: { pointer?: string }[];
}

interface LintResult {
  exitCode: number;
  /** One line per problem: severity, rule, where, message. */
  problems: string[];
}

/** `redocly lint --format=json` on one document; the JSON report is on stdout, banners and progress on stderr. */
function lint(documentPath: string, configPath = CONFIG): Promise<LintResult> {
  return new Promise((resolve, reject) => {
    execFile(
      REDOCLY,
      ['lint', '--config', configPath, '--format=json', documentPath],
      // No telemetry and no update check: the test must not depend on the network.
      { cwd: ROOT, env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' }, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const exitCode = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        let report: { problems?: LintProblem[] };
        try {
          report = JSON.parse(stdout) as { problems?: LintProblem[] };
        } catch {
          reject(new Error(`redocly lint exited ${exitCode} without a JSON report:\n${stderr}\n${stdout}`));
          return;
        }
        if (!Array.isArray(report.problems)) {
          reject(new Error(`redocly lint answered a report without problems:\n${stdout}`));
          return;
        }
        const problems = report.problems.map(
          (problem) => `${problem.severity} ${problem.ruleId} at ${problem.location?.[0]?.pointer ?? '?'}: ${problem.message}`,
        );
        resolve({ exitCode, problems });
      },
    );
  });
}

describe('The committed OpenAPI documents', () => {
  describe.each([...OPENAPI_DOCUMENTS])('openapi/$file', ({ api, file }) => {
    const document = readCommittedDocument<OpenApiDocument>(api);
    const operations = operationsOf(document);

    it('lints without errors or warnings under redocly.yaml (Redocly recommended rules and ours)', async () => {
      const result = await lint(join('openapi', file));
      expect(result.problems).toEqual([]);
      expect(result.exitCode).toBe(0);
    });

    it('gives every operation a unique camelCase operationId, a summary and a description', () => {
      expect(operations.length).toBeGreaterThan(0);
      const violations: string[] = [];
      const seen = new Map<string, string>();
      for (const { where, operation } of operations) {
        const id = operation.operationId;
        if (typeof id !== 'string' || !/^[a-z][a-zA-Z0-9]*$/.test(id)) violations.push(`${where}: operationId ${String(id)} is not camelCase`);
        else if (seen.has(id)) violations.push(`${where}: operationId ${id} is also ${seen.get(id)}'s`);
        else seen.set(id, where);
        if (!nonEmpty(operation.summary)) violations.push(`${where}: no summary`);
        if (!nonEmpty(operation.description)) violations.push(`${where}: no description`);
      }
      expect(violations).toEqual([]);
    });

    it('gives every operation a 2xx response, and every response a description, a schema for a JSON body and described headers', () => {
      const violations: string[] = [];
      for (const { where, operation } of operations) {
        const responses = Object.entries(operation.responses ?? {});
        if (!responses.some(([status]) => /^2(\d\d|XX)$/.test(status))) violations.push(`${where}: no 2xx response`);
        for (const [status, response] of responses) {
          if (!nonEmpty(response.description)) violations.push(`${where} ${status}: no description`);
          for (const [mediaType, media] of Object.entries(response.content ?? {})) {
            if (isJson(mediaType) && !media.schema) violations.push(`${where} ${status} ${mediaType}: no schema`);
          }
          for (const [name, header] of Object.entries(response.headers ?? {})) {
            if (!nonEmpty(header.description)) violations.push(`${where} ${status} header ${name}: no description`);
            if (!header.schema || !('type' in header.schema)) violations.push(`${where} ${status} header ${name}: no schema with a type`);
          }
        }
      }
      expect(violations).toEqual([]);
    });

    it('lists the problems every route can answer: 400, 401, 403, 429, 500, 503; 414 with path parameters; 413 and 415 where a body is read', () => {
      const violations: string[] = [];
      for (const { where, method, path, operation } of operations) {
        if (api === 'oauth') {
          // The OAuth routes answer RFC 6749 errors: a form endpoint every one of its own; discovery its rate limit.
          const expected = OAUTH_ERRORS[where] ?? ['400', '401', '413', '429', '500', '503'];
          const missing = expected.filter((status) => !(status in (operation.responses ?? {})));
          if (missing.length > 0) violations.push(`${where}: no ${missing.join(', ')}`);
          continue;
        }
        const expected = ['400', '401', '403', '429', '500', '503'];
        // The router refuses a path parameter over maxParamLength (src/app.ts) before any route runs.
        if (path.includes('{')) expected.push('414');
        // Fastify reads a body sent with these methods whatever the route declares: too large is 413, not JSON is 415.
        if (['post', 'put', 'patch', 'delete'].includes(method)) expected.push('413', '415');
        const missing = expected.filter((status) => !(status in (operation.responses ?? {})));
        if (missing.length > 0) violations.push(`${where}: no ${missing.join(', ')}`);
      }
      expect(violations).toEqual([]);
    });

    it('shows an example of every request body', () => {
      const violations: string[] = [];
      for (const { where, operation } of operations) {
        for (const [mediaType, given] of Object.entries(operation.requestBody?.content ?? {})) {
          // A named model's example is in its component (src/plugins/openapi-components.ts).
          const model = given.schema?.$ref?.replace('#/components/schemas/', '');
          const media = model === undefined ? given : { ...given, schema: document.components?.schemas?.[model] };
          const hasExample =
            media.example !== undefined ||
            Object.keys(media.examples ?? {}).length > 0 ||
            media.schema?.example !== undefined ||
            (media.schema?.examples?.length ?? 0) > 0;
          if (!hasExample) violations.push(`${where} ${mediaType}: no example`);
        }
      }
      expect(violations).toEqual([]);
    });

    it('secures every operation with scopes its security scheme defines', () => {
      const schemes = document.components?.securitySchemes ?? {};
      const violations: string[] = [];
      for (const { where, operation } of operations) {
        const requirements = operation.security ?? document.security ?? [];
        if (requirements.length === 0 && !PUBLIC_OPERATIONS.has(where)) violations.push(`${where}: not secured`);
        if (requirements.length > 0 && PUBLIC_OPERATIONS.has(where)) violations.push(`${where}: public, but documented as secured`);
        for (const requirement of requirements) {
          for (const [name, scopes] of Object.entries(requirement)) {
            const scheme = schemes[name];
            if (!scheme) {
              violations.push(`${where}: no security scheme ${name}`);
              continue;
            }
            if (scheme.type !== 'oauth2') continue;
            const defined = new Set(Object.values(scheme.flows ?? {}).flatMap((flow) => Object.keys(flow.scopes ?? {})));
            if (scopes.length === 0) violations.push(`${where}: names no scope of ${name}`);
            for (const scope of scopes) if (!defined.has(scope)) violations.push(`${where}: scope ${scope} is not defined by ${name}`);
          }
        }
      }
      expect(violations).toEqual([]);
    });
  });

  it('a broken copy fails the lint with its problem listed, so a clean lint means something', async () => {
    // The Access API's document: redocly.yaml relaxes no rule for it, so the copy (linted outside openapi/) meets the same rules.
    const document = readCommittedDocument<OpenApiDocument>('accessapi');
    const [first] = operationsOf(document);
    delete first!.operation.description;
    const directory = mkdtempSync(join(tmpdir(), 'openapi-quality-'));
    try {
      const broken = join(directory, 'broken.json');
      writeFileSync(broken, JSON.stringify(document));
      const result = await lint(broken);
      expect(result.exitCode).not.toBe(0);
      expect(result.problems).toEqual([expect.stringMatching(/^error operation-description at .*\/description: /)]);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
