// What the service keeps sealed under SECRETS_KEY, and the additional data that binds each sealed value to its row.
// A sealed value copied into another row does not open there (AES-GCM authenticates the additional data). Used where
// each value is sealed and opened, and by the re-encryption after a change of SECRETS_KEY (README, "SECRETS_KEY").

export const SEALED_AAD = {
  /** The private half of a signing key (access tokens or a tenant's ticket key), by key id. */
  signingKey: (kid: string) => `signing-key:${kid}`,
  /** A credential as handed to the phone (docs/api-reference.md 8.2), by tenant and ticket. */
  credential: (tenantId: string, ticketId: string) => `ticket-credential:${tenantId}:${ticketId}`,
  /** A webhook subscription's signing secret, current or previous (docs/api-reference.md 10). */
  webhookSecret: (tenantId: string, webhookId: string) => `webhook:${tenantId}:${webhookId}`,
} as const;
