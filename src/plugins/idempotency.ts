// Idempotency-Key on the creates of an API (docs/api-reference.md 4.3): routes opt in with `config: { idempotent: true }`.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { BadRequestError } from '../errors.js';
import { requestFingerprint, type IdempotencyService } from '../services/idempotency.service.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Honour `Idempotency-Key` on this route. `{ withholdSecret }`: the answer carries a secret shown once (a client's,
     * a subscription's); a replay answers the same resource without it and with `secretWithheld: true`.
     */
    idempotent?: boolean | { withholdSecret: string };
  }
  interface FastifyRequest {
    idempotencyKey: string | null;
  }
}

/** Printable ASCII without spaces at the ends, at most 255 characters (the IETF draft's and Stripe's bound). */
const KEY_PATTERN = /^[\x21-\x7e]([\x20-\x7e]{0,253}[\x21-\x7e])?$/;

/** Headers a replay repeats; the rest (dates, request ids) belong to the new exchange. */
const REPLAYED_HEADERS = ['location', 'content-type', 'cache-control', 'retry-after'];

/**
 * docs/api-reference.md 7.6, docs/security-cases.md H57: what is stored for a replay of an answer that shows a secret once.
 * The secret is never stored (nor shown again): the replay says it was withheld.
 */
function withoutSecret(payload: string, field: string): string {
  // Fails closed: an answer that is not a JSON object is not kept at all, so a secret can never reach the store.
  const withheld = JSON.stringify({ secretWithheld: true });
  try {
    const body = JSON.parse(payload) as unknown;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return withheld;
    const { [field]: _secret, ...rest } = body as Record<string, unknown>;
    return JSON.stringify({ ...rest, secretWithheld: true });
  } catch {
    return withheld;
  }
}

/**
 * Keys are per OAuth client, not per tenant: a key is chosen by the client that sends it and names that client's
 * request, so another client of the tenant must neither claim it nor be answered its stored response.
 */
function ownerOf(request: FastifyRequest) {
  return { tenantId: request.auth.tenantId, clientId: request.auth.clientId };
}

/** A route option that takes one hook or several, as a list. */
function hookList<Hook>(hooks: Hook | Hook[] | undefined): Hook[] {
  return hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks];
}

export default fp(
  async function idempotency(app: FastifyInstance, options: { idempotency: IdempotencyService }) {
    const service = options.idempotency;
    app.decorateRequest('idempotencyKey', null);

    async function reserve(request: FastifyRequest, reply: FastifyReply) {
      const header = request.headers['idempotency-key'];
      if (header === undefined) return;
      if (typeof header !== 'string' || !KEY_PATTERN.test(header)) {
        throw new BadRequestError('Idempotency-Key must be 1 to 255 printable ASCII characters.', [
          { field: 'Idempotency-Key', message: 'is invalid' },
        ]);
      }
      const fingerprint = requestFingerprint(request.method, request.url, request.body);
      const outcome = await service.begin(ownerOf(request), header, fingerprint);
      if (outcome.kind === 'replay') {
        const { status, headers, body } = outcome.response;
        return reply.code(status).headers({ ...headers, 'idempotent-replayed': 'true' }).send(body);
      }
      request.idempotencyKey = header;
    }

    /** Stores the answer under the key `reserve` took; a 5xx frees the key instead, so a retry runs again. */
    async function complete(request: FastifyRequest, reply: FastifyReply, payload: unknown) {
      const key = request.idempotencyKey;
      if (key === null) return payload;
      request.idempotencyKey = null;
      if (reply.statusCode >= 500) {
        // Nothing worth replaying happened: let a retry run again.
        await service.release(ownerOf(request), key);
        return payload;
      }
      const headers: Record<string, string> = {};
      for (const name of REPLAYED_HEADERS) {
        const value = reply.getHeader(name);
        if (value !== undefined) headers[name] = String(value);
      }
      const text = typeof payload === 'string' ? payload : String(payload ?? '');
      const idempotent = (request.routeOptions.config as { idempotent?: boolean | { withholdSecret: string } }).idempotent;
      const secretField = typeof idempotent === 'object' && reply.statusCode < 300 ? idempotent.withholdSecret : null;
      await service.complete(ownerOf(request), key, {
        status: reply.statusCode,
        headers,
        body: secretField === null ? text : withoutSecret(text, secretField),
      });
      return payload;
    }

    // A route-level preHandler, appended after the ones plugins registered earlier added (the per-client rate limit):
    // a request refused with 429 must not reserve its key, or the retry the key exists for would replay the 429.
    app.addHook('onRoute', (route) => {
      if (!(route.config as { idempotent?: boolean } | undefined)?.idempotent) return;
      route.preHandler = [...hookList(route.preHandler), reserve];
      // Only these routes pay for the onSend hook; every other answer of the API skips it.
      route.onSend = [...hookList(route.onSend), complete];
    });
  },
  { name: 'idempotency' },
);
