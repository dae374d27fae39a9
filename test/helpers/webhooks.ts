// Webhook subscriptions for the delivery tests, inserted directly (with a sealed Standard Webhooks secret) until the
// subscription API (POST /operatorapi/webhooks) exists; and a real HTTP receiver that verifies what it gets.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import type { Queryable } from '../../src/db/database.js';
import { newWebhookSecret, sealWebhookSecret } from '../../src/services/webhooks/signing-secrets.js';
import type { SecretsKey } from '../../src/shared/crypto.js';
import { PATIENCE_MS } from './process.js';

export interface TestWebhook {
  id: string;
  secret: string;
}

/**
 * A subscription of `tenantId` to `eventTypes` at `url`, dispatched from the tenant's current last event on (as a new
 * subscription is: it receives what happens after it exists).
 */
export async function insertWebhook(
  db: Queryable,
  secretsKey: SecretsKey,
  tenantId: string,
  url: string,
  eventTypes: string[],
  options: { enabled?: boolean; now?: number } = {},
): Promise<TestWebhook> {
  const id = randomUUID();
  const secret = newWebhookSecret();
  const now = options.now ?? Date.now();
  const enabled = options.enabled ?? true;
  // The tenant's last event read first: Citus plans no subquery inside an INSERT … VALUES.
  const { rows } = await db.query<{ last_seq: number | string }>('SELECT last_seq FROM tenant_audit_counters WHERE tenant_id = $1', [tenantId]);
  await db.query(
    `INSERT INTO webhooks (tenant_id, id, url, event_types, enabled, disabled_reason, disabled_at, secret_sealed,
                           dispatched_through, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)`,
    [
      tenantId,
      id,
      url,
      eventTypes,
      enabled,
      enabled ? null : 'operator',
      enabled ? null : now,
      sealWebhookSecret(secretsKey, tenantId, id, secret),
      Number(rows[0]?.last_seq ?? 0),
      now,
    ],
  );
  return { id, secret };
}

/** A rotation as the subscription API will make it: a new secret, the old one signing beside it until `until`. */
export async function rotateWebhookSecret(db: Queryable, secretsKey: SecretsKey, tenantId: string, webhookId: string, until: number): Promise<string> {
  const secret = newWebhookSecret();
  await db.query(
    `UPDATE webhooks SET previous_secret_sealed = secret_sealed, previous_secret_until = $3, secret_sealed = $4
      WHERE tenant_id = $1 AND id = $2`,
    [tenantId, webhookId, until, sealWebhookSecret(secretsKey, tenantId, webhookId, secret)],
  );
  return secret;
}

export async function setWebhookEnabled(db: Queryable, tenantId: string, webhookId: string, enabled: boolean): Promise<void> {
  await db.query(
    `UPDATE webhooks SET enabled = $3, disabled_reason = CASE WHEN $3 THEN NULL ELSE 'operator' END,
                         disabled_at = CASE WHEN $3 THEN NULL ELSE 0 END, failing_since = NULL
      WHERE tenant_id = $1 AND id = $2`,
    [tenantId, webhookId, enabled],
  );
}

export interface ReceivedRequest {
  headers: Record<string, string>;
  body: string;
  json: { id: string; type: string; sequence?: number; time: number; data: Record<string, unknown>; requestId?: string };
}

/** A real node:http receiver on 127.0.0.1: answers `status` (changeable), records every request. */
export interface Receiver {
  url: string;
  port: number;
  received: ReceivedRequest[];
  status: number;
  close(): Promise<void>;
  /** Waits until `count` requests arrived (or fails after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
}

export async function startReceiver(status = 200, port = 0): Promise<Receiver> {
  const received: ReceivedRequest[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const headers = Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name, String(value)]));
      received.push({ headers, body, json: JSON.parse(body) as ReceivedRequest['json'] });
      response.statusCode = receiver.status;
      response.end('receiver says: some body the service must not store');
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const actualPort = (server.address() as AddressInfo).port;
  const receiver: Receiver = {
    url: `http://127.0.0.1:${actualPort}/hook`,
    port: actualPort,
    received,
    status,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
    async waitFor(count, timeoutMs = PATIENCE_MS) {
      const deadline = Date.now() + timeoutMs;
      while (received.length < count) {
        if (Date.now() > deadline) throw new Error(`the receiver got ${received.length} requests, not ${count}, within ${timeoutMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return received;
    },
  };
  return receiver;
}

/** Verifies a request with the standardwebhooks package, as a receiver would: the parsed body, or throws when no signature matches. */
export function verify(secret: string, request: ReceivedRequest): unknown {
  return new Webhook(secret).verify(request.body, request.headers);
}
