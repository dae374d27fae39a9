// Webhook signing secrets (docs/contract.md 10): made here, shown once, kept sealed under SECRETS_KEY.
import { randomBytes } from 'node:crypto';
import { decrypt, encrypt } from './crypto.js';

/**
 * A Standard Webhooks secret: `whsec_` and the base64 of 32 random bytes (the specification asks for 24 to 64 bytes).
 * Receivers verify with it, so the server must be able to sign with it: it is sealed, not hashed.
 */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** The additional data that binds a sealed secret to its subscription: a sealed value moved to another row fails. */
const aadOf = (tenantId: string, webhookId: string) => `webhook:${tenantId}:${webhookId}`;

export function sealWebhookSecret(secretsKey: Buffer, tenantId: string, webhookId: string, secret: string): Buffer {
  return encrypt(secretsKey, secret, aadOf(tenantId, webhookId));
}

export function unsealWebhookSecret(secretsKey: Buffer, tenantId: string, webhookId: string, sealed: Buffer): string {
  return decrypt(secretsKey, sealed, aadOf(tenantId, webhookId));
}
