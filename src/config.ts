// The service configuration: one TypeBox schema over the environment, validated once at start.
import { Type, type Static } from '@sinclair/typebox';
import { Value, type ValueError } from '@sinclair/typebox/value';
import { REVIVABLE_INTERFACES } from './shared/deprecations.js';
import { isLoopbackHost, isLoopbackUrl } from './shared/loopback.js';

/**
 * Every variable the server and the CLI read. Descriptions feed the README table, so they are the documentation.
 * Values arrive as strings; `loadConfig` converts them to the declared types before validating.
 */
export const ConfigSchema = Type.Object(
  {
    PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8080, description: 'TCP port to listen on.' }),
    HOST: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'Interface to listen on. Default: `0.0.0.0` (every interface) when `PUBLIC_URL` names another machine; while it is unset or loopback, `localhost` (127.0.0.1 and ::1): a development start on this machine.',
      }),
    ),
    PUBLIC_URL: Type.Optional(
      Type.String({
        pattern: '^https?://[^\\s/?#]+(/[^\\s?#]*)?$',
        description:
          'External base address and OAuth issuer, byte for byte (no query or fragment); every lock trusts `{PUBLIC_URL}/tenants/{tenant}`, so changing it means re-provisioning every lock. Default `http://localhost:PORT`, refused at start on a `HOST` other than loopback (see `ALLOW_LOOPBACK_PUBLIC_URL`).',
      }),
    ),
    ALLOW_LOOPBACK_PUBLIC_URL: Type.Union([Type.Literal('true'), Type.Literal('false')], {
      default: 'false',
      description:
        '`true` lets the server listen on a `HOST` other than loopback while `PUBLIC_URL` is unset or names this machine (`localhost`, 127.0.0.0/8, ::1): a trial behind a port mapping. Locks provisioned meanwhile trust that loopback issuer.',
    }),
    METRICS_TOKEN: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z0-9._~+/-]{32,}=*$',
        description:
          'A bearer token (RFC 6750, at least 32 characters: `openssl rand -hex 32`) that a scrape of `GET /metrics` must send, compared in constant time. README, "Metrics", shows the Prometheus scrape config.',
      }),
    ),
    METRICS_PORT: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 65535,
        description: 'Serve `GET /metrics` on a listener of its own, on `METRICS_HOST` at this port, and no longer on `PORT`.',
      }),
    ),
    METRICS_HOST: Type.String({
      minLength: 1,
      default: '127.0.0.1',
      description: 'Interface of the `METRICS_PORT` listener. Beyond loopback (e.g. `0.0.0.0` in a container) it needs `METRICS_TOKEN`, or `METRICS_UNAUTHENTICATED=true`.',
    }),
    METRICS_UNAUTHENTICATED: Type.Union([Type.Literal('true'), Type.Literal('false')], {
      default: 'false',
      description:
        'Without `METRICS_TOKEN`, `GET /metrics` answers `403` on a listener other machines may reach (every one but a development start on loopback `HOST` and `PUBLIC_URL`, or a loopback `METRICS_HOST`). `true` serves it to anyone there: only when something in front keeps all but Prometheus from it.',
    }),
    DATABASE_URL: Type.Optional(
      Type.String({
        pattern: '^postgres(ql)?://',
        description: 'PostgreSQL connection string. Unset: the embedded PGlite database in `DATA_DIR`.',
      }),
    ),
    DATA_DIR: Type.String({
      minLength: 1,
      default: './data',
      description: 'Directory of the embedded database (and its generated `SECRETS_KEY`) when `DATABASE_URL` is unset.',
    }),
    LOG_LEVEL: Type.Union(
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((level) => Type.Literal(level)),
      { default: 'info', description: 'pino log level.' },
    ),
    BODY_LIMIT: Type.Integer({
      minimum: 1024,
      maximum: 64 * 1024 * 1024,
      default: 1024 * 1024,
      description: 'Largest accepted request body in bytes; larger bodies get `413`.',
    }),
    TRUST_PROXY: Type.String({
      default: 'false',
      pattern: '^(true|false|[0-9]{1,2}|[0-9a-fA-F.:/, ]+)$',
      description:
        '`false`, `true`, a hop count, or a comma-separated list of proxy addresses/CIDRs whose `X-Forwarded-*` headers are trusted.',
    }),
    TLS_CERT_FILE: Type.Optional(
      Type.String({ minLength: 1, description: 'PEM certificate; with `TLS_KEY_FILE` the server speaks HTTPS.' }),
    ),
    TLS_KEY_FILE: Type.Optional(Type.String({ minLength: 1, description: 'PEM private key for `TLS_CERT_FILE`.' })),
    SECRETS_KEY: Type.Optional(
      Type.String({
        pattern: '^[0-9a-fA-F]{64}$',
        description:
          '64 hex characters: seals what the service must use again (signing keys, stored credentials, webhook secrets). Required with `DATABASE_URL`; generated into `DATA_DIR` otherwise. To change it see README, "SECRETS_KEY".',
      }),
    ),
    SECRETS_KEY_PREVIOUS: Type.Optional(
      Type.String({
        pattern: '^[0-9a-fA-F]{64}(,[0-9a-fA-F]{64})*$',
        description:
          'Only while `SECRETS_KEY` is being changed: the key(s) it replaces, comma-separated. They still open what they sealed until `acs secrets-key reencrypt` has sealed it again under `SECRETS_KEY`; then remove this.',
      }),
    ),
    DB_POOL_MAX: Type.Integer({ minimum: 1, maximum: 1000, default: 10, description: 'PostgreSQL pool size.' }),
    SYNC_MAX_WAITING: Type.Integer({
      minimum: 0,
      default: 20,
      description:
        'docs/lock-sync.md: a lock sync that needs the database answers `503` with a jittered `Retry-After` while more than this many requests wait for a pooled connection (a sync storm after an outage).',
    }),
    SYNC_WAIT_MAX_HELD: Type.Integer({
      minimum: 0,
      maximum: 1_000_000,
      default: 10_000,
      description:
        'docs/lock-sync.md: how many syncs held open with `?wait=` one instance keeps at once (each costs memory only, no database connection); one more answers `503` with a jittered `Retry-After`. 0: none is held.',
    }),
    SYNC_RETRY_AFTER_MAX_SECONDS: Type.Integer({
      minimum: 1,
      maximum: 3600,
      default: 30,
      description: 'docs/lock-sync.md: a refused sync\'s `Retry-After` is drawn uniformly from 1 to this many seconds.',
    }),
    DB_CONNECT_TIMEOUT_MS: Type.Integer({
      minimum: 100,
      default: 2000,
      description: 'How long a request waits for a database connection before it answers `503`.',
    }),
    DB_STATEMENT_TIMEOUT_MS: Type.Integer({
      minimum: 100,
      default: 30000,
      description: 'PostgreSQL `statement_timeout` for every pooled connection.',
    }),
    MIGRATION_LOCK_TIMEOUT_MS: Type.Integer({
      minimum: 1,
      default: 5000,
      description:
        'How long a migration waits for a table lock (PostgreSQL `lock_timeout`) before it gives up, rolls back whole and fails the start (docs/scaling.md).',
    }),
    SHUTDOWN_TIMEOUT_MS: Type.Integer({
      minimum: 100,
      default: 10000,
      description: 'Grace period for in-flight requests on SIGTERM/SIGINT before the process exits anyway.',
    }),
    ACCESS_TOKEN_TTL_SECONDS: Type.Integer({
      minimum: 30,
      maximum: 86400,
      default: 3600,
      description: 'Lifetime of access tokens (`expires_in`).',
    }),
    CREDENTIAL_MAX_LIFETIME: Type.Integer({
      minimum: 60,
      maximum: 90 * 86400,
      default: 604800,
      description:
        'Longest offline validity of a ticket credential, in seconds (docs/api-reference.md 8.2): `exp` is at most `iat` plus this. Also how long a new ticket key is announced before it signs, and how long a retired one stays published (docs/api-reference.md 8.1).',
    }),
    TICKET_KEY_EMERGENCY_ROTATION_MIN_INTERVAL: Type.Integer({
      minimum: 0,
      maximum: 30 * 86400,
      default: 3600,
      description:
        'Seconds that must pass between two emergency ticket-key rotations of a tenant (docs/api-reference.md 8.1): each one leaves locks that are never online refusing new credentials until an installer visits, so more are refused with `429`. 0: no limit.',
    }),
    REFRESH_TOKEN_TTL_SECONDS: Type.Integer({
      minimum: 60,
      default: 30 * 86400,
      description: 'Lifetime of Access API refresh tokens (the `offline` scope).',
    }),
    JWT_ALG: Type.Union([Type.Literal('EdDSA'), Type.Literal('ES256')], {
      default: 'EdDSA',
      description: 'Signature algorithm of new signing keys: `EdDSA` (Ed25519) or `ES256` (P-256).',
    }),
    BCRYPT_COST: Type.Integer({
      minimum: 4,
      maximum: 15,
      default: 10,
      description: 'bcrypt cost of user passwords. Keep 10 or more in production; tests lower it.',
    }),
    LOCKOUT_THRESHOLD: Type.Integer({
      minimum: 1,
      default: 5,
      description: 'Password-grant attempts for one `user@tenant` within `LOCKOUT_WINDOW_SECONDS` (counted before the password is checked; a success clears them) that lock it.',
    }),
    LOCKOUT_WINDOW_SECONDS: Type.Integer({ minimum: 1, default: 900, description: 'Window in which attempts count.' }),
    LOCKOUT_SECONDS: Type.Integer({
      minimum: 1,
      default: 900,
      description: 'How long a locked `user@tenant` is refused, whatever the password.',
    }),
    TOKEN_RATE_LIMIT_PER_MINUTE: Type.Integer({
      minimum: 1,
      default: 600,
      description: 'Requests per minute and client IP on the OAuth endpoints; more get `429`.',
    }),
    API_RATE_LIMIT_PER_MINUTE: Type.Integer({
      minimum: 1,
      default: 6000,
      description: 'Requests per minute and OAuth client on the Operator, Access and Device APIs; more get `429`.',
    }),
    CLAIM_RATE_LIMIT_PER_MINUTE: Type.Integer({
      minimum: 0,
      default: 30,
      description:
        'Claim-link look-ups and redemptions (`/deviceapi/claims/{code}`) per minute and client IP; more get `429`. 0 turns the limit off (benchmarks only).',
    }),
    DEPRECATED_INTERFACES_ENABLED: Type.String({
      default: '',
      pattern: '^[a-z0-9, -]*$',
      description:
        `Comma-separated removed interfaces to keep alive (with \`Deprecation\` and \`Sunset\` headers): ${REVIVABLE_INTERFACES.map((key) => `\`${key}\``).join(', ')}.`,
    }),
    EVENT_RETENTION_DAYS: Type.Integer({
      minimum: 1,
      maximum: 3650,
      default: 30,
      description:
        'Days the event feed (`/operatorapi/events`) serves an event and the webhook delivery attempts are kept, for a tenant that has not set its own `retention.eventDays` (docs/api-reference.md 10, 16.1). Events a subscription has not yet been sent are kept until they are.',
    }),
    AUDIT_RETENTION_DAYS: Type.Integer({
      minimum: 1,
      maximum: 3650,
      default: 730,
      description:
        'Days the audit trail (`/operatorapi/audit-events`) keeps an entry, for a tenant that has not set its own `retention.auditDays` (docs/api-reference.md 16.1). An event and its audit entry are one record, deleted once both periods are over.',
    }),
    ACCESS_LOG_RETENTION_DAYS: Type.Integer({
      minimum: 1,
      maximum: 3650,
      default: 365,
      description:
        'Days an access-log entry is kept after the server received it, for a tenant that has not set its own `retention.accessLogDays` (docs/api-reference.md 8.5, 16.1); older ones are pruned in the background. Counted from receipt, not from the entry\'s `lockTime`, which the lock or a relaying phone states.',
    }),
    // At least one full upload (docs/lock-integration.md 8: 1000 entries), or a lock's full upload could never be stored.
    ACCESS_LOG_ENTRIES_PER_LOCK_PER_MINUTE: Type.Integer({
      minimum: 1000,
      maximum: 1_000_000,
      default: 1000,
      description:
        'New access-log entries one lock may have stored per minute, by its own client and every phone relaying for it together; an upload beyond it gets `429` with `Retry-After` and nothing of it is stored (docs/api-reference.md 8.5). Re-sent entries cost nothing. The default is one full upload a minute: a week of a busy door\'s log (one decision a minute, about 10,000 entries) arrives in ten minutes, far above what a door does live.',
    }),
    WEBHOOK_RETRY_SCHEDULE: Type.String({
      pattern: '^[0-9]{1,7}(,[0-9]{1,7}){0,29}$',
      default: '5,300,1800,7200,18000,36000,36000,86400,86400',
      description:
        'Comma-separated delays in seconds between the attempts of one webhook delivery, before jitter (docs/api-reference.md 10). The default retries for 75.6 hours; tests set short ones.',
    }),
    WEBHOOK_TIMEOUT_MS: Type.Integer({
      minimum: 100,
      maximum: 60000,
      default: 10000,
      description: 'How long a webhook receiver has to answer an attempt before it counts as failed (docs/api-reference.md 10).',
    }),
    WEBHOOK_DISABLE_AFTER_SECONDS: Type.Integer({
      minimum: 1,
      default: 5 * 86400,
      description: 'A subscription whose every attempt failed for this long is disabled (`webhook.disabled`).',
    }),
    WEBHOOK_ALLOW_INSECURE: Type.Union([Type.Literal('true'), Type.Literal('false')], {
      default: 'false',
      description:
        '`true` allows `http` webhook URLs and loopback or private addresses, for development and tests. Link-local and cloud-metadata addresses stay refused.',
    }),
    WEBHOOK_WORKER_INTERVAL_MS: Type.Integer({
      minimum: 10,
      maximum: 60000,
      default: 1000,
      description: 'How often each instance looks for new events to send to webhook subscriptions and for retries that are due.',
    }),
    WEBHOOK_DELIVERY_BUSY_PERCENT: Type.Integer({
      minimum: 1,
      maximum: 100,
      default: 10,
      description:
        'While an instance is serving API requests, the share of wall time (percent) its webhook worker may spend sending; after each batch it pauses for the rest. `100` never pauses. Under load deliveries are later, never lost (`webhook_oldest_undelivered_age_seconds` shows how much later).',
    }),
    JOB_MAX_ITEMS: Type.Integer({
      minimum: 1,
      default: 100000,
      description: 'The most items one bulk job may hold (docs/api-reference.md 14); a larger job is a `400`.',
    }),
    JOB_MAX_BYTES: Type.Integer({
      minimum: 1024,
      default: 20 * 1024 * 1024,
      description: 'The largest body `POST /operatorapi/jobs` takes, JSON or CSV, in bytes (docs/api-reference.md 14); a larger one is a `413`. Every other request keeps `BODY_LIMIT`.',
    }),
    JOB_MAX_ACTIVE_PER_TENANT: Type.Integer({
      minimum: 1,
      default: 5,
      description: 'How many bulk jobs one tenant may have queued or running at once; one more is a `429` until one finishes.',
    }),
    JOB_WORKER_INTERVAL_MS: Type.Integer({
      minimum: 10,
      maximum: 60000,
      default: 1000,
      description: 'How often an idle instance looks for a bulk job to run.',
    }),
    JOB_LEASE_SECONDS: Type.Integer({
      minimum: 1,
      maximum: 3600,
      default: 30,
      description:
        'How long an instance holds a bulk job without progress before another may take it over: a killed instance\'s job resumes after at most this long. Each applied batch renews it.',
    }),
    WEBHOOK_DELIVERY_MIN_PER_SECOND: Type.Integer({
      minimum: 1,
      default: 200,
      description:
        'The floor of `WEBHOOK_DELIVERY_BUSY_PERCENT`: however busy the instance is, its worker never pauses so long that it sends fewer webhook deliveries a second than this, so a backlog always drains.',
    }),
  },
  { additionalProperties: true },
);

export type Config = Static<typeof ConfigSchema> & { PUBLIC_URL: string; HOST: string };

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

const knownKeys = Object.keys(ConfigSchema.properties) as (keyof typeof ConfigSchema.properties)[];

/** TypeBox's Convert reads `80.5` as 80, `1e3` as 1 and `true` as 1: integers must be written as plain digits. */
const INTEGER_TEXT = /^\s*[+-]?\d+\s*$/;
const integerKeys = knownKeys.filter((key) => (ConfigSchema.properties[key] as { type?: unknown }).type === 'integer');

/** Reads only the variables the schema names; empty strings count as unset (as `docker compose` passes them). */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const raw: Record<string, unknown> = {};
  for (const key of knownKeys) {
    const value = env[key];
    if (value !== undefined && value !== '') raw[key] = value;
  }
  const problems: string[] = [];
  for (const key of integerKeys) {
    const value = raw[key];
    if (typeof value === 'string' && !INTEGER_TEXT.test(value)) problems.push(`${key}=${JSON.stringify(value)}: ${integerRange(key)}`);
  }
  const converted = Value.Convert(ConfigSchema, Value.Default(ConfigSchema, raw)) as Record<string, unknown>;
  for (const error of Value.Errors(ConfigSchema, converted)) {
    const key = error.path.replace(/^\//, '').split('/')[0] ?? '';
    if (problems.some((problem) => problem.startsWith(`${key}=`) || problem.startsWith(`${key} (`))) continue;
    problems.push(`${shownValue(key, raw[key])}: ${explain(key, error)}`);
  }
  const config = converted as Static<typeof ConfigSchema>;
  if (problems.length === 0) {
    const unknown = config.DEPRECATED_INTERFACES_ENABLED.split(',')
      .map((item) => item.trim())
      .filter((item) => item !== '' && !REVIVABLE_INTERFACES.includes(item));
    if (unknown.length > 0) {
      problems.push(
        `DEPRECATED_INTERFACES_ENABLED=${JSON.stringify(config.DEPRECATED_INTERFACES_ENABLED)}: unknown ${unknown.map((item) => JSON.stringify(item)).join(', ')}; ` +
          `the interfaces that can be kept alive are ${REVIVABLE_INTERFACES.join(', ')}`,
      );
    }
    if (Boolean(config.TLS_CERT_FILE) !== Boolean(config.TLS_KEY_FILE)) {
      problems.push('TLS_CERT_FILE and TLS_KEY_FILE: set both to serve HTTPS, or neither');
    }
  }
  if (problems.length > 0) throw new ConfigError(dedupe(problems));
  // Kept byte for byte: it is the OAuth issuer (RFC 8414 section 3.3 compares it exactly).
  const publicUrl = config.PUBLIC_URL ?? `http://localhost:${config.PORT}`;
  // An issuer of this machine only is a development start on it (README, "Quick start"): it listens there alone.
  const host = config.HOST ?? (isLoopbackUrl(publicUrl) ? 'localhost' : '0.0.0.0');
  return { ...config, HOST: host, PUBLIC_URL: publicUrl };
}

/**
 * What the server refuses to listen with (the CLI, which never listens, does not ask). A lock is provisioned with its
 * tenant's issuer `{PUBLIC_URL}/tenants/{tenant}` and accepts no other (docs/api-reference.md 8.1): a server reachable
 * from other machines that signs as `localhost` provisions locks that must all be provisioned again once PUBLIC_URL
 * is right. `env` is what loadConfig read. Throws ConfigError, as loadConfig does.
 */
export function checkListener(config: Config, env: Record<string, string | undefined>): void {
  const problems: string[] = [];
  const explicitPublicUrl = env.PUBLIC_URL !== undefined && env.PUBLIC_URL !== '';
  if (config.ALLOW_LOOPBACK_PUBLIC_URL !== 'true' && !isLoopbackHost(config.HOST) && isLoopbackUrl(config.PUBLIC_URL)) {
    const issuer = explicitPublicUrl ? `PUBLIC_URL=${JSON.stringify(config.PUBLIC_URL)}` : `PUBLIC_URL is unset, so it defaults to ${config.PUBLIC_URL}`;
    problems.push(
      `${issuer}, an address of this machine only, while HOST=${JSON.stringify(config.HOST)} listens for other machines. ` +
        'PUBLIC_URL is the OAuth issuer, and every lock is provisioned to trust its tenant\'s issuer {PUBLIC_URL}/tenants/{tenant}: ' +
        'changing PUBLIC_URL later means re-provisioning every lock. Set PUBLIC_URL to the address phones, apps and locks ' +
        'reach this service at (e.g. https://acs.example.com), or listen on this machine only (HOST=127.0.0.1), or set ' +
        'ALLOW_LOOPBACK_PUBLIC_URL=true if the loopback issuer is meant (a trial behind a port mapping).',
    );
  }
  if (config.METRICS_PORT !== undefined && config.METRICS_PORT === config.PORT) {
    problems.push(`METRICS_PORT=${config.METRICS_PORT}: must differ from PORT, the API listener`);
  }
  if (problems.length > 0) throw new ConfigError(problems);
}

/** Variables whose value is a secret (or may carry one, as a password in a connection string): never echoed. */
const SECRET_KEYS: ReadonlySet<string> = new Set(['SECRETS_KEY', 'SECRETS_KEY_PREVIOUS', 'DATABASE_URL', 'METRICS_TOKEN']);

/** `KEY="value"` so the operator sees what was read; for a secret only its length, so no log or terminal keeps it. */
function shownValue(key: string, value: unknown): string {
  if (SECRET_KEYS.has(key) && typeof value === 'string') return `${key} (value not shown, ${value.length} characters)`;
  return `${key}=${JSON.stringify(value ?? null)}`;
}

/** What a refused value must be instead: the choices of a choice, the form of a pattern, the bounds of a number. */
function explain(key: string, error: ValueError): string {
  const schema = ConfigSchema.properties[key as keyof typeof ConfigSchema.properties] as
    | { anyOf?: { const?: unknown }[]; pattern?: string; description?: string }
    | undefined;
  if (schema?.anyOf) return `must be one of ${schema.anyOf.map((choice) => String(choice.const)).join(', ')}`;
  if (key === 'SECRETS_KEY') return 'must be exactly 64 hex characters (`openssl rand -hex 32`); look for a space, a newline or quotes';
  if (key === 'SECRETS_KEY_PREVIOUS') return 'must be one or more keys of 64 hex characters, separated by commas without spaces';
  if (key === 'DATABASE_URL') return 'must be a PostgreSQL connection string starting with postgres:// or postgresql://';
  if (key === 'METRICS_TOKEN') return 'must be at least 32 characters of A-Z a-z 0-9 . _ ~ + / - (`openssl rand -hex 32`)';
  if (schema?.pattern && schema.description) return `does not have the expected form. ${schema.description}`;
  if (integerKeys.includes(key as (typeof integerKeys)[number])) return integerRange(key);
  return error.message;
}

/** "must be a whole number from 1 to 1000", from the schema's bounds. */
function integerRange(key: string): string {
  const { minimum, maximum } = ConfigSchema.properties[key as keyof typeof ConfigSchema.properties] as { minimum?: number; maximum?: number };
  const range =
    minimum !== undefined && maximum !== undefined ? ` from ${minimum} to ${maximum}` : minimum !== undefined ? ` of at least ${minimum}` : '';
  return `must be a whole number${range}, written in digits`;
}

function dedupe(items: string[]): string[] {
  return [...new Set(items)];
}

/** Fastify's `trustProxy` option from the `TRUST_PROXY` string. */
export function trustProxyOption(value: string): boolean | number | string[] {
  if (value === 'true') return true;
  if (value === 'false') return false;
  if (/^[0-9]+$/.test(value)) return Number(value);
  return value
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);
}
