// Wires the framework-free services together: one container per app (and per CLI run).
import { createHmac } from 'node:crypto';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { createClientService } from './oauth/client.service.js';
import { createClientAssertionService } from './oauth/client-assertion.service.js';
import type { Clock } from './context.js';
import type { SecretsKey } from '../shared/crypto.js';
import { createSecretsKeyService } from './keys/reseal.service.js';
import { createAccessTokenKeyService } from './keys/access-token-keys.service.js';
import { createTicketKeyService } from './keys/ticket-keys.service.js';
import { createRevocationService } from './oauth/revoked-access-tokens.service.js';
import { createTenantService } from './oauth/tenant.service.js';
import { createAccessTokenVerifier } from './oauth/access-token-verifier.service.js';
import { createGrantService } from './oauth/grants.service.js';
import { createAuthorizationService } from './oauth/authorization.service.js';
import { createRevocationIntrospectionService } from './oauth/revocation-introspection.service.js';
import { createUserService } from './oauth/user.service.js';
import { createAuditService } from './audit.service.js';
import { createIdempotencyService } from './idempotency.service.js';
import { createMobileDeviceService } from './mobile-device.service.js';
import { createHolderKeyService } from './holder-key.service.js';
import { createErasureService } from './erasure.service.js';
import { createSettingsService } from './settings.service.js';
import { createClaimService } from './claim.service.js';
import { createLockdownService } from './lockdown.service.js';
import { createSecuredObjectService } from './secured-object.service.js';
import { createTicketService } from './ticket.service.js';
import { parseRevivedInterfaces } from '../shared/vocabulary.js';
import type { RetentionPeriods } from '../shared/retention-periods.js';
import { LOCK_GROUPS, RESIDENTS } from '../db/repositories/group.repo.js';
import { createAccessPermissionService } from './access-permission.service.js';
import { createGroupService } from './group.service.js';
import { createCredentialService } from './credential.service.js';
import { createChangeWatermarks } from './change-watermark.js';
import { createDownloadService } from './download.service.js';
import { createLockSyncService } from './lock-sync.service.js';
import { createHeldSyncs, heldLookConcurrency } from './held-syncs.js';
import { createAccessCheckService } from './explain.service.js';
import { createDoorAccessService } from './door-access.service.js';
import { createResidentRevocationService } from './resident-revocation.service.js';
import { createAccessLogService } from './access-log.service.js';
import { createAccessLogBudget } from './access-log-budget.js';
import { createAccessLogRetention } from './access-log-retention.js';
import { createLockTelemetryService } from './lock-telemetry.service.js';
import { createRequestLoad } from './webhooks/pacing.js';
import { createWebhookDeliveryService, parseRetrySchedule } from './webhooks/delivery.service.js';
import { createWebhookService } from './webhooks/subscription.service.js';
import { createWebhookUrlGuard, type Resolver } from './webhooks/url-guard.js';
import { noMetrics, type DomainMetrics } from './domain-metrics.js';
import { createJobService } from './job.service.js';
import { createJobRetention } from './job-retention.js';
import { createJobWorker } from './job-worker.js';
import type { WritersOn } from './job-items.js';

export interface ServiceDependencies {
  db: Database;
  config: Config;
  log: Logger;
  secretsKey: SecretsKey;
  clock?: Clock;
  /** Resolves webhook host names (default: the system's DNS); tests make a name resolve to a private address. */
  resolveHost?: Resolver;
  /** Where the services count what they did (README "Metrics"); default: nowhere. */
  metrics?: DomainMetrics;
}

/** How often each instance re-reads revocations if a NOTIFY was lost: well inside docs/api-reference.md 3.4's 5 s. */
const REVOCATION_POLL_MS = 2000;
/** Safety net behind the keys' NOTIFY: how often each instance re-reads the signing keys anyway. */
const KEY_REFRESH_MS = 60_000;
/** docs/api-reference.md 4.3: Idempotency-Key records are kept per tenant for 24 h. */
const IDEMPOTENCY_TTL_MS = 24 * 3600_000;
/**
 * docs/api-reference.md 7.6: a reservation without an answer is held at most this long, or twice the statement timeout
 * where that is longer, so no request still running loses its key.
 */
const IDEMPOTENCY_MIN_LEASE_MS = 60_000;

export function createServices({ db, config, log, secretsKey, clock = Date.now, resolveHost, metrics = noMetrics }: ServiceDependencies) {
  const accessTokenTtlMs = config.ACCESS_TOKEN_TTL_SECONDS * 1000;
  const credentialLifetimeMs = config.CREDENTIAL_MAX_LIFETIME * 1000;
  const revocations = createRevocationService({ db, clock, log, pollMs: REVOCATION_POLL_MS });
  const accessTokenKeys = createAccessTokenKeyService({ db, secretsKey, clock, alg: config.JWT_ALG, retentionMs: accessTokenTtlMs });
  const ticketKeys = createTicketKeyService({
    db,
    secretsKey,
    clock,
    alg: config.JWT_ALG,
    // docs/api-reference.md 8.1, 8.2: no credential outlives one CREDENTIAL_MAX_LIFETIME, so a retired ticket key stays
    // published that long after its last signature, and a new one is published that long before its first, so
    // locks that are never online learn it from a visiting phone in time.
    retentionMs: credentialLifetimeMs,
    announceMs: credentialLifetimeMs,
    emergencyMinIntervalMs: config.TICKET_KEY_EMERGENCY_ROTATION_MIN_INTERVAL * 1000,
  });
  const credentials = createCredentialService({
    db,
    publicUrl: config.PUBLIC_URL,
    keys: ticketKeys,
    secretsKey,
    maxLifetimeSeconds: config.CREDENTIAL_MAX_LIFETIME,
  });
  const clients = createClientService({ db, clock, revocations, accessTokenTtlMs });
  // RFC 7523 3, item 3: an assertion names the token endpoint (either path, docs/api-reference.md 3.3) or the issuer.
  const issuerBase = config.PUBLIC_URL.replace(/\/+$/, '');
  const clientAssertions = createClientAssertionService({
    db,
    clock,
    log,
    audiences: [config.PUBLIC_URL, `${issuerBase}/oauth/token`, `${issuerBase}/oauth2/token`],
  });
  const users = createUserService({ db, clock, bcryptCost: config.BCRYPT_COST, revocations, accessTokenTtlMs });
  const tenants = createTenantService({ db, clock, clients });
  const revived = parseRevivedInterfaces(config.DEPRECATED_INTERFACES_ENABLED);
  const lockTelemetry = createLockTelemetryService({ db, clock, credentialLifetimeMs });
  const securedObjects = createSecuredObjectService({ db, clock, revived, revocations, telemetry: lockTelemetry, accessTokenTtlMs, metrics });
  // docs/api-reference.md 11.1: key proofs are made out to the service's public URL, as config has it.
  const holderKeys = createHolderKeyService({ db, clock, log, audience: config.PUBLIC_URL, credentialLifetimeMs });
  // docs/api-reference.md 16.1: the instance's periods, for every tenant that has not chosen its own.
  const retentionDefaults: RetentionPeriods = {
    accessLogDays: config.ACCESS_LOG_RETENTION_DAYS,
    eventDays: config.EVENT_RETENTION_DAYS,
    auditDays: config.AUDIT_RETENTION_DAYS,
  };
  const settings = createSettingsService({ db, clock, retentionDefaults });
  const lockdowns = createLockdownService({ db, clock });
  const mobileDevices = createMobileDeviceService({
    db,
    clock,
    revocations,
    accessTokenTtlMs,
    metrics,
    revokeKeyOfRemovedDevice: holderKeys.revokeKeyOfRemovedDevice,
  });
  const tickets = createTicketService({ db, clock, revived, metrics });
  // docs/api-reference.md 12: claim links are made out to PUBLIC_URL, and so are the phones' key proofs.
  const claims = createClaimService({
    db,
    clock,
    log,
    publicUrl: config.PUBLIC_URL,
    mobileDevices,
    revokeKeyOfDevice: holderKeys.revokeKeyOfRemovedDevice,
    revocations,
    metrics,
  });
  const audit = createAuditService({ db, clock, log, retentionDefaults });
  const idempotency = createIdempotencyService({
    db,
    clock,
    log,
    ttlMs: IDEMPOTENCY_TTL_MS,
    leaseMs: Math.max(IDEMPOTENCY_MIN_LEASE_MS, 2 * config.DB_STATEMENT_TIMEOUT_MS),
  });
  const residents = createGroupService({ db, clock, kind: RESIDENTS, metrics });
  const lockGroups = createGroupService({ db, clock, kind: LOCK_GROUPS, metrics });
  const accessPermissions = createAccessPermissionService({ db, clock, revived, metrics });
  // docs/api-reference.md 14: a bulk job applies each item with the single-item services, made over the item's own
  // transaction (job-worker.ts), so the item and its recorded outcome commit together.
  const writersOn: WritersOn = (on) => ({
    securedObjects: createSecuredObjectService({ db: on, clock, revived, revocations, telemetry: lockTelemetry, accessTokenTtlMs, metrics }),
    mobileDevices: createMobileDeviceService({ db: on, clock, revocations, accessTokenTtlMs, metrics }),
    residents: createGroupService({ db: on, clock, kind: RESIDENTS, metrics }),
    lockGroups: createGroupService({ db: on, clock, kind: LOCK_GROUPS, metrics }),
    accessPermissions: createAccessPermissionService({ db: on, clock, revived, metrics }),
    tickets: createTicketService({ db: on, clock, revived, metrics }),
  });
  const jobWorkerIntervalMs = config.JOB_WORKER_INTERVAL_MS;
  const jobWorker = createJobWorker({ db, clock, log, writersOn, intervalMs: jobWorkerIntervalMs, leaseMs: config.JOB_LEASE_SECONDS * 1000 });
  const jobs = createJobService({
    db,
    clock,
    limits: { maxItems: config.JOB_MAX_ITEMS, maxBytes: config.JOB_MAX_BYTES, maxActivePerTenant: config.JOB_MAX_ACTIVE_PER_TENANT },
    retryAfterSeconds: Math.max(1, Math.ceil(jobWorkerIntervalMs / 1000)),
    onSubmitted: () => jobWorker.wake(),
  });
  const changeWatermarks = createChangeWatermarks({ db, log });
  const downloads = createDownloadService({ db, clock, credentials, metrics });
  // docs/lock-sync.md: syncs held with `?wait=`, woken by the change notifications; half as many look at once as the
  // pool has connections (the rest wait in memory), so the other half serves every other request meanwhile.
  const heldSyncs = createHeldSyncs({
    maxHeld: config.SYNC_WAIT_MAX_HELD,
    retryAfterMaxSeconds: config.SYNC_RETRY_AFTER_MAX_SECONDS,
    concurrency: heldLookConcurrency(config.DB_POOL_MAX),
    current: changeWatermarks.current,
  });
  const stopHearingChanges = changeWatermarks.subscribe(heldSyncs.listener);
  const lockSyncs = createLockSyncService({
    db,
    clock,
    credentials,
    telemetry: lockTelemetry,
    watermarks: changeWatermarks,
    admission: { maxWaiting: config.SYNC_MAX_WAITING, retryAfterMaxSeconds: config.SYNC_RETRY_AFTER_MAX_SECONDS },
    metrics,
    held: heldSyncs,
  });
  const accessChecks = createAccessCheckService({ db, clock, credentials });
  const accessLogs = createAccessLogService({ db, clock, budget: createAccessLogBudget({ entriesPerMinute: config.ACCESS_LOG_ENTRIES_PER_LOCK_PER_MINUTE }) });
  const accessLogRetention = createAccessLogRetention({ db, clock, log, retentionDefaults });
  const erasures = createErasureService({ db, clock, log });
  const jobRetention = createJobRetention({ db, clock, log, retentionDefaults });
  // docs/api-reference.md 10: one guard for subscribing and for delivering, so both refuse the same addresses.
  const webhookUrlGuard = createWebhookUrlGuard({
    allowInsecure: config.WEBHOOK_ALLOW_INSECURE === 'true',
    ...(resolveHost ? { resolve: resolveHost } : {}),
  });
  const webhooks = createWebhookService({ db, clock, secretsKey, urlGuard: webhookUrlGuard });
  // The API requests this instance serves: the webhook worker yields to them (services/webhooks/pacing.ts).
  const requestLoad = createRequestLoad();
  const webhookDeliveries = createWebhookDeliveryService({
    db,
    clock,
    log,
    secretsKey,
    guard: webhookUrlGuard,
    retryScheduleSeconds: parseRetrySchedule(config.WEBHOOK_RETRY_SCHEDULE),
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    disableAfterSeconds: config.WEBHOOK_DISABLE_AFTER_SECONDS,
    intervalMs: config.WEBHOOK_WORKER_INTERVAL_MS,
    retentionDefaults,
    pacing: { load: requestLoad, busyPercent: config.WEBHOOK_DELIVERY_BUSY_PERCENT, minPerSecond: config.WEBHOOK_DELIVERY_MIN_PER_SECOND },
  });
  const grants = createGrantService({
    db,
    clock,
    log,
    issuer: config.PUBLIC_URL,
    keys: accessTokenKeys,
    users,
    revocations,
    metrics,
    accessTokenTtlSeconds: config.ACCESS_TOKEN_TTL_SECONDS,
    refreshTokenTtlSeconds: config.REFRESH_TOKEN_TTL_SECONDS,
    lockout: {
      threshold: config.LOCKOUT_THRESHOLD,
      windowMs: config.LOCKOUT_WINDOW_SECONDS * 1000,
      durationMs: config.LOCKOUT_SECONDS * 1000,
    },
  });
  const authorization = createAuthorizationService({
    db,
    clock,
    log,
    issuer: config.PUBLIC_URL,
    clients,
    checkLogin: grants.checkLogin,
    // A key of its own for the sign-in form's CSRF tokens, derived from SECRETS_KEY so that every instance shares it.
    csrfKey: createHmac('sha256', secretsKey.current).update('authorization endpoint csrf').digest(),
  });
  // One verifier, so the bearer checks, revocation and introspection share its cache of checked signatures.
  const accessTokens = createAccessTokenVerifier({
    clock,
    issuer: config.PUBLIC_URL,
    keys: accessTokenKeys,
    revocations,
  });
  const revocationIntrospection = createRevocationIntrospectionService({
    db,
    clock,
    issuer: config.PUBLIC_URL,
    revocations,
    accessTokens,
    accessTokenTtlSeconds: config.ACCESS_TOKEN_TTL_SECONDS,
  });
  /** The OAuth side as the routes and the bearer checks call it: the three parts in services/oauth/, one object. */
  const tokens = { ...grants, ...revocationIntrospection, verifyAccessToken: accessTokens.verifyAccessToken };

  return {
    clock,
    secretsKey: createSecretsKeyService({ db, secretsKey }),
    /** The token endpoint counts its answers here: only it sees every outcome, client authentication's included. */
    metrics,
    revocations,
    accessTokenKeys,
    clients,
    clientAssertions,
    users,
    tenants,
    tokens,
    authorization,
    revived,
    securedObjects,
    mobileDevices,
    holderKeys,
    settings,
    claims,
    lockdowns,
    tickets,
    audit,
    idempotency,
    residents,
    lockGroups,
    accessPermissions,
    ticketKeys,
    credentials,
    downloads,
    lockSyncs,
    heldSyncs,
    changeWatermarks,
    accessChecks,
    doorAccess: createDoorAccessService({ db, clock }),
    residentRevocations: createResidentRevocationService({ db, clock, metrics }),
    accessLogs,
    accessLogRetention,
    erasures,
    jobRetention,
    lockTelemetry,
    webhookUrlGuard,
    webhooks,
    webhookDeliveries,
    jobs,
    jobWorker,
    requestLoad,
    /** Loads keys (generating the first one) and starts following revocations. */
    async start(): Promise<void> {
      await accessTokenKeys.ensureKey();
      await accessTokenKeys.start(KEY_REFRESH_MS);
      await ticketKeys.start(KEY_REFRESH_MS);
      await revocations.start();
      await changeWatermarks.start();
      idempotency.start();
      audit.start();
      accessLogRetention.start();
      erasures.start();
      jobRetention.start();
      clientAssertions.start();
      holderKeys.start();
      claims.start();
      tokens.start();
      authorization.start();
      webhookDeliveries.start();
      jobWorker.start();
    },
    async stop(): Promise<void> {
      // Held syncs answer at once (docs/lock-sync.md); the app's preClose did so already when it is shutting down.
      heldSyncs.close();
      stopHearingChanges();
      // First: attempts under way are abandoned while the database is still open (their claims come due again).
      await webhookDeliveries.stop();
      // The item under way commits or rolls back before the database closes; an unfinished job gives its lease back,
      // and an erasure stops at its next batch (its lease lets another instance resume it).
      await jobWorker.stop();
      await erasures.stop();
      tokens.stop();
      authorization.stop();
      idempotency.stop();
      audit.stop();
      accessLogRetention.stop();
      jobRetention.stop();
      clientAssertions.stop();
      holderKeys.stop();
      claims.stop();
      await accessTokenKeys.stop();
      await ticketKeys.stop();
      await revocations.stop();
      await changeWatermarks.stop();
    },
  };
}

export type Services = ReturnType<typeof createServices>;
