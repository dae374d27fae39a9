// One webhook delivery over HTTP (docs/api-reference.md 10): the Standard Webhooks signing headers, the URL guard asked again at delivery, the timeout, and what the answer came to.
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { Webhook } from 'standardwebhooks';
import type { SecretsKey } from '../../shared/crypto.js';
import type { DeliveryContext } from './delivery-context.js';
import { unsealWebhookSecret } from './signing-secrets.js';
import type { WebhookUrlGuard } from './url-guard.js';
import { BoundedMap } from '../../shared/bounded-map.js';

/** A receiver's answer body is read up to this much and discarded (it is never stored or logged). */
const MAX_RESPONSE_BYTES = 64 * 1024;
/** A receiver origin's keep-alive agent not used for this long (beyond the request timeout) is dropped with its idle sockets. */
const AGENT_IDLE_MS = 60_000;
/** How many unsealed secrets are kept (the oldest go first). */
const UNSEALED_CACHE_SIZE = 1_000;

/** What one HTTP attempt came to. `error` is a short reason of ours, never the receiver's body. */
export interface SendResult {
  statusCode?: number;
  error?: string;
  durationMs: number;
}

/** A subscription's sealed secrets: the current one, and the previous one while a rotation keeps it signing. */
export interface SealedSecrets {
  tenantId: string;
  webhookId: string;
  secretSealed: Buffer;
  previousSecretSealed: Buffer | null;
  previousSecretUntil: number | null;
}

/** An attempt cut short because the instance is stopping: nothing is recorded, the claim's lease brings it back. */
export class AbandonedError extends Error {}

/** The Standard Webhooks signature header: one `v1,<base64>` per secret (its signer), space-separated. */
export function signatures(signers: readonly Webhook[], id: string, time: Date, body: string): string {
  return signers.map((signer) => signer.sign(id, time, body)).join(' ');
}

const TIMED_OUT = Symbol('timed out');

/** `promise`'s value, or TIMED_OUT when it has not settled within `ms`. */
async function settledWithin<T>(promise: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = setTimeout(() => resolve(TIMED_OUT), ms);
  });
  try {
    return await Promise.race([promise, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** A short, secret-free reason for a failed request. */
export function reasonOf(error: unknown, timeoutMs: number): string {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  if (message === 'timeout') return `no answer within ${timeoutMs} ms`;
  if (code === 'EACCES' && message.startsWith('webhook address refused')) return message.slice(0, 300);
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ECONNRESET') return 'connection reset';
  if (code === 'ENOTFOUND') return message.slice(0, 300);
  if (code?.startsWith('ERR_TLS') || code?.includes('CERT')) return `TLS error (${code})`;
  return code ? `request failed (${code})` : 'request failed';
}

export function createWebhookSender(context: DeliveryContext, options: { secretsKey: SecretsKey; guard: WebhookUrlGuard }) {
  const { clock, timeoutMs, concurrency } = context;
  const { secretsKey, guard } = options;
  /**
   * One keep-alive agent per receiver origin: a busy subscription's events reuse its connections (each made through
   * the guard's `lookup`, so a connection only ever goes to an address checked when it was made), and one origin's
   * slow receiver queues on its own sockets. An origin not used for a while is dropped with its idle sockets.
   */
  const agents = new Map<string, { agent: http.Agent; usedAt: number }>();
  const agentFor = (target: URL): http.Agent => {
    const origin = target.origin;
    const now = performance.now();
    let entry = agents.get(origin);
    if (!entry) {
      for (const [key, idle] of agents) {
        if (now - idle.usedAt > AGENT_IDLE_MS + timeoutMs) {
          idle.agent.destroy();
          agents.delete(key);
        }
      }
      const agentOptions = { keepAlive: true, maxSockets: concurrency, timeout: Math.max(timeoutMs, AGENT_IDLE_MS) };
      entry = { agent: target.protocol === 'https:' ? new https.Agent(agentOptions) : new http.Agent(agentOptions), usedAt: now };
      agents.set(origin, entry);
    }
    entry.usedAt = now;
    return entry.agent;
  };
  /** Attempts under way: aborted when the instance stops (their claims simply become due again). */
  const inFlight = new Set<AbortController>();

  /**
   * Signers (the unsealed secret, decoded once) by their sealed bytes: a busy subscription is sent many events in a
   * row, each signed with the same secret. Keyed by the sealed value itself, so a rotation (a new sealed value) is never
   * served an old secret.
   */
  const unsealed = new BoundedMap<string, Webhook>(UNSEALED_CACHE_SIZE);
  const unseal = (tenantId: string, webhookId: string, sealed: Buffer): Webhook => {
    const key = `${tenantId}/${webhookId}/${sealed.toString('base64')}`;
    let signer = unsealed.get(key);
    if (signer === undefined) {
      signer = new Webhook(unsealWebhookSecret(secretsKey, tenantId, webhookId, sealed));
      unsealed.set(key, signer);
    }
    return signer;
  };

  return {
    /** The signers of a subscription's deliveries at `now`: its secret, and the previous one while the rotation keeps it. */
    signersOf(target: SealedSecrets, now: number): Webhook[] {
      const secrets = [unseal(target.tenantId, target.webhookId, target.secretSealed)];
      if (target.previousSecretSealed && target.previousSecretUntil !== null && target.previousSecretUntil > now) {
        secrets.push(unseal(target.tenantId, target.webhookId, target.previousSecretSealed));
      }
      return secrets;
    },

    /**
     * The guard's answer per receiver URL for one batch, asked once per URL, not once per event: a busy subscription's
     * batch is all one URL. Each connection is still checked when it is made (the guard's `lookup`).
     */
    refusalsOfBatch(): (url: string) => Promise<string | null> {
      const refusals = new Map<string, Promise<string | null>>();
      return (url) => {
        let refusal = refusals.get(url);
        if (!refusal) {
          refusal = guard.refusal(url);
          // Awaited by each attempt; this keeps an early rejection from counting as unhandled meanwhile.
          refusal.catch(() => undefined);
          refusals.set(url, refusal);
        }
        return refusal;
      };
    },

    /**
     * One POST (docs/api-reference.md 10): the guard is asked first and again at connect time (its `lookup`), redirects
     * are not followed, the answer body is read up to a cap and dropped, and the whole exchange, the first name lookup
     * included, has `timeoutMs`. `refusal`: the guard's answer for `url`, when a batch already asked it (once per URL).
     * Throws AbandonedError when the instance stops meanwhile (abandonAll).
     */
    async send(
      url: string,
      id: string,
      body: string,
      signers: readonly Webhook[],
      refusal: Promise<string | null> = guard.refusal(url),
    ): Promise<SendResult> {
      const started = performance.now();
      const duration = () => Math.round(performance.now() - started);
      // The name is resolved by the receiver's own name server: its answer counts against the timeout too.
      const refused = await settledWithin(refusal, timeoutMs);
      if (refused === TIMED_OUT) return { error: reasonOf(new Error('timeout'), timeoutMs), durationMs: duration() };
      if (refused) return { error: `address refused: ${refused}`.slice(0, 300), durationMs: duration() };
      const now = new Date(clock());
      const controller = new AbortController();
      inFlight.add(controller);
      try {
        const statusCode = await new Promise<number>((resolve, reject) => {
          const target = new URL(url);
          const request = (target.protocol === 'https:' ? https : http).request(
            target,
            {
              method: 'POST',
              agent: agentFor(target),
              lookup: guard.lookup,
              signal: controller.signal,
              headers: {
                'content-type': 'application/json',
                'content-length': Buffer.byteLength(body),
                'user-agent': 'access-credential-service-webhooks',
                'webhook-id': id,
                'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
                'webhook-signature': signatures(signers, id, now, body),
              },
            },
            (response: IncomingMessage) => {
              let received = 0;
              response.on('data', (chunk: Buffer) => {
                received += chunk.length;
                // Enough: the status is what counts, and the rest is not read.
                if (received > MAX_RESPONSE_BYTES) {
                  resolve(response.statusCode ?? 0);
                  response.destroy();
                }
              });
              response.on('end', () => resolve(response.statusCode ?? 0));
              response.on('error', reject);
              response.on('close', () => resolve(response.statusCode ?? 0));
            },
          );
          const deadline = setTimeout(() => request.destroy(new Error('timeout')), Math.max(0, timeoutMs - duration()));
          request.on('close', () => clearTimeout(deadline));
          request.on('error', (error) => {
            clearTimeout(deadline);
            reject(error);
          });
          request.end(body);
        });
        if (statusCode >= 300 && statusCode < 400) return { statusCode, error: 'redirects are not followed', durationMs: duration() };
        return { statusCode, durationMs: duration() };
      } catch (error) {
        if (controller.signal.aborted) throw new AbandonedError();
        return { error: reasonOf(error, timeoutMs), durationMs: duration() };
      } finally {
        inFlight.delete(controller);
      }
    },

    /** Aborts the attempts under way (the instance is stopping): each throws AbandonedError. */
    abandonAll(): void {
      for (const controller of inFlight) controller.abort();
    },

    /** Drops every receiver origin's connections (once the attempts under way have ended). */
    closeConnections(): void {
      for (const { agent } of agents.values()) agent.destroy();
      agents.clear();
    },
  };
}

export type WebhookSender = ReturnType<typeof createWebhookSender>;
