// Resolves SECRETS_KEY: from the environment, or generated once into DATA_DIR for the embedded database (docs/api-reference.md 1).
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../../config.js';
import { secretsKeyOf, type SecretsKey } from '../../shared/crypto.js';

export class SecretsKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretsKeyError';
  }
}

const FILE_NAME = 'secrets.key';

/**
 * SECRETS_KEY, with the keys it replaces while it is being changed (SECRETS_KEY_PREVIOUS): they open what they sealed
 * until `acs secrets-key reencrypt` has sealed it again under the current key (README, "SECRETS_KEY").
 */
export function resolveSecretsKey(config: Config): SecretsKey {
  const current = currentSecretsKey(config);
  const previous = (config.SECRETS_KEY_PREVIOUS ?? '')
    .split(',')
    .filter((hex) => hex !== '')
    .map((hex) => Buffer.from(hex, 'hex'));
  if (previous.some((key) => key.equals(current))) {
    throw new SecretsKeyError('SECRETS_KEY_PREVIOUS holds the current key: it lists only the keys SECRETS_KEY replaces.');
  }
  return secretsKeyOf(current, previous);
}

function currentSecretsKey(config: Config): Buffer {
  if (config.SECRETS_KEY) return Buffer.from(config.SECRETS_KEY, 'hex');
  if (config.DATABASE_URL) {
    // Several instances share a PostgreSQL database: a key generated on one machine would be missing on the others.
    throw new SecretsKeyError(
      'SECRETS_KEY is required with DATABASE_URL: set it to 64 hex characters (e.g. `openssl rand -hex 32`), the same on every instance.',
    );
  }
  mkdirSync(config.DATA_DIR, { recursive: true });
  const path = join(config.DATA_DIR, FILE_NAME);
  try {
    const stored = readFileSync(path, 'utf8').trim();
    if (!/^[0-9a-fA-F]{64}$/.test(stored)) throw new SecretsKeyError(`${path} does not hold 64 hex characters.`);
    return Buffer.from(stored, 'hex');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const generated = randomBytes(32).toString('hex');
  writeFileSync(path, `${generated}\n`, { mode: 0o600, flag: 'wx' });
  return Buffer.from(generated, 'hex');
}
