// Wires the framework-free services together: one container per app (and per CLI run).
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { createClientService } from './client.service.js';
import type { Clock } from './context.js';
import { createKeyService } from './key.service.js';
import { createRevocationService } from './revocation.service.js';
import { createTenantService } from './tenant.service.js';
import { createTokenService } from './token.service.js';
import { createUserService } from './user.service.js';

export interface ServiceDependencies {
  db: Database;
  config: Config;
  log: Logger;
  secretsKey: Buffer;
  clock?: Clock;
}

/** How often each instance re-reads revocations if a NOTIFY was lost: well inside contract 3.4's 5 s. */
const REVOCATION_POLL_MS = 2000;

export function createServices({ db, config, log, secretsKey, clock = Date.now }: ServiceDependencies) {
  const accessTokenTtlMs = config.ACCESS_TOKEN_TTL_SECONDS * 1000;
  const revocations = createRevocationService({ db, clock, log, pollMs: REVOCATION_POLL_MS });
  const accessTokenKeys = createKeyService({
    db,
    secretsKey,
    clock,
    alg: config.JWT_ALG,
    purpose: 'access_token',
    retentionMs: accessTokenTtlMs,
  });
  const clients = createClientService({ db, clock, revocations, accessTokenTtlMs });
  const users = createUserService({ db, clock, bcryptCost: config.BCRYPT_COST, revocations, accessTokenTtlMs });
  const tenants = createTenantService({ db, clock, clients });
  const tokens = createTokenService({
    db,
    clock,
    log,
    issuer: config.PUBLIC_URL,
    keys: accessTokenKeys,
    users,
    revocations,
    accessTokenTtlSeconds: config.ACCESS_TOKEN_TTL_SECONDS,
    refreshTokenTtlSeconds: config.REFRESH_TOKEN_TTL_SECONDS,
    lockout: {
      threshold: config.LOCKOUT_THRESHOLD,
      windowMs: config.LOCKOUT_WINDOW_SECONDS * 1000,
      durationMs: config.LOCKOUT_SECONDS * 1000,
    },
  });

  return {
    clock,
    revocations,
    accessTokenKeys,
    clients,
    users,
    tenants,
    tokens,
    /** Loads keys (generating the first one) and starts following revocations. */
    async start(): Promise<void> {
      await accessTokenKeys.ensureKey(null);
      await revocations.start();
    },
    async stop(): Promise<void> {
      await revocations.stop();
    },
  };
}

export type Services = ReturnType<typeof createServices>;
