// Webhook signing secrets (docs/api-reference.md 10): made here, shown once, kept sealed under SECRETS_KEY.
import { randomBytes } from 'node:crypto';
import { seal, unseal, type SecretsKey } from '../../shared/crypto.js';
import { SEALED_AAD } from '../keys/sealed-values.js';

/**
 * A Standard Webhooks secret: `whsec_` and the base64 of 32 random bytes (the specification asks for 24 to 64 bytes).
 * Receivers verify with it, so the server must be able to sign with it: it is sealed, not hashed.
 */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

export function sealWebhookSecret(secretsKey: SecretsKey, tenantId: string, webhookId: string, secret: string): Buffer {
  return seal(secretsKey, secret, SEALED_AAD.webhookSecret(tenantId, webhookId));
}

export function unsealWebhookSecret(secretsKey: SecretsKey, tenantId: string, webhookId: string, sealed: Buffer): string {
  return unseal(secretsKey, sealed, SEALED_AAD.webhookSecret(tenantId, webhookId));
}
