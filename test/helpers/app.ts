// Builds the app on a fresh database for a test file; `app.inject` talks to it without a socket.
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { buildApp, type App, type AppDependencies } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import { createPostgresDatabase } from '../../src/db/postgres.js';
import { createLogger } from '../../src/logger.js';
import { createTestDatabase, type TestDatabase } from './database.js';
import { validateInjectedResponses, type OpenApiResponseValidator } from './openapi-response-validator.js';
import { secretsKeyOf, type SecretsKey } from '../../src/shared/crypto.js';

export interface TestApp {
  app: App;
  config: Config;
  database: TestDatabase;
  /** Decrypts the signing keys: a second instance on the same database needs it to sign. */
  secretsKey: SecretsKey;
  /** Every log line the app wrote, for asserting that no secret reaches the logs. */
  logLines: string[];
  close(): Promise<void>;
}

export interface TestAppOptions {
  /** Runs after buildApp and before app.ready(): register extra routes (slow, throwing, echo) for a test. */
  beforeReady?: (app: App) => void | Promise<void>;
  /** Milliseconds since the epoch, for tests that move time (token expiry, lockout windows). */
  clock?: () => number;
  /** Resolves webhook host names instead of the DNS (a name made to resolve to a private address). */
  resolveHost?: AppDependencies['resolveHost'];
  /** The built operator console's directory (default dist/console). */
  consoleDirectory?: string;
  /**
   * Every `app.inject` answer to an operation of the committed OpenAPI documents (or of the given validators' documents)
   * is validated against them: status, media type, body schema; a mismatch rejects the inject (docs/house-style.md
   * convention 2: the schema is the API documentation, so an answer that strays from it fails). Default: on;
   * TEST_VALIDATE_RESPONSES=0 turns it off for a run.
   */
  validateResponses?: boolean | OpenApiResponseValidator[];
}

export async function buildTestApp(env: Record<string, string> = {}, options: TestAppOptions = {}): Promise<TestApp> {
  const database = await createTestDatabase();
  // Tests scrape /metrics without a token (test/ops/metrics-access.test.ts covers the token and the refusal).
  const config = loadConfig({ LOG_LEVEL: 'info', PUBLIC_URL: 'http://issuer.test', METRICS_UNAUTHENTICATED: 'true', ...env });
  const logLines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, callback) {
      logLines.push(String(chunk));
      callback();
    },
  });
  const secretsKey = secretsKeyOf(randomBytes(32));
  let app: App;
  try {
    app = await buildApp(config, {
      db: database.db,
      log: createLogger(config.LOG_LEVEL, sink),
      secretsKey,
      ...(options.clock ? { clock: options.clock } : {}),
      ...(options.resolveHost ? { resolveHost: options.resolveHost } : {}),
      ...(options.consoleDirectory ? { consoleDirectory: options.consoleDirectory } : {}),
    });
  } catch (error) {
    await database.db.close();
    throw error;
  }
  try {
    await options.beforeReady?.(app);
    await app.ready();
    const validateResponses = options.validateResponses ?? process.env.TEST_VALIDATE_RESPONSES !== '0';
    if (validateResponses) validateInjectedResponses(app, validateResponses === true ? undefined : validateResponses);
  } catch (error) {
    // The app owns the database: closing it closes the database too.
    await app.close();
    throw error;
  }
  return {
    app,
    config,
    database,
    secretsKey,
    logLines,
    async close() {
      await app.close();
      assertNoSecretsLogged(logLines);
    },
  };
}

/**
 * docs/house-style.md convention 12 (logs redact secrets): every test file's logs are swept when its app closes, so the whole suite runs with its logs
 * checked. Whatever the test did, no line may hold a JWT (access token or ticket credential), a bcrypt hash, an
 * HTTP Basic or Bearer credential, or a form-encoded secret.
 */
const SECRET_SHAPES: [string, RegExp][] = [
  ['a JWT (access token or credential)', /eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/],
  ['a bcrypt hash', /\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}/],
  ['an Authorization credential', /(Basic|Bearer) [A-Za-z0-9+/=._~-]{16,}/],
  ['a form-encoded secret', /(client_secret|password|refresh_token)=(?!\[Redacted\])[^&\s"]+/],
  ['a webhook signing secret', /whsec_[A-Za-z0-9+/]{16,}/],
];

export function assertNoSecretsLogged(lines: string[]): void {
  for (const line of lines) {
    for (const [what, shape] of SECRET_SHAPES) {
      if (shape.test(line)) throw new Error(`A log line holds ${what}: ${line.slice(0, 300)}`);
    }
  }
}

/**
 * A second server on a PostgreSQL test's database, as another instance behind the same load balancer. With the test
 * app's SECRETS_KEY by default (the peer signs with the same keys); another key shows what an instance without it does.
 */
export function anotherInstance(t: TestApp, secretsKey: SecretsKey = t.secretsKey): Promise<App> {
  if (!t.database.url) throw new Error('anotherInstance needs a PostgreSQL test database (TEST_DATABASE_URL)');
  return buildApp(t.config, {
    db: createPostgresDatabase({
      connectionString: t.database.url,
      poolMax: 4,
      connectTimeoutMs: 2000,
      statementTimeoutMs: 30_000,
      log: createLogger('silent'),
    }),
    log: createLogger('silent'),
    secretsKey,
  });
}
