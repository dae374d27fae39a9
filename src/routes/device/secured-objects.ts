// GET /deviceapi/securedobjects/{id}/sync (docs/api-reference.md 6.2): an online lock syncs its tickets and revocations.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { SyncAnswerSchema, SyncQuery, TrustSchema } from '../../schemas/lock-sync.js';
import { ObjectIdParams, ResponseHeaders, withHeaders } from '../../schemas/common.js';
import { problemResponses } from '../../schemas/problem.js';
import type { Services } from '../../services/index.js';
import { linkNextPage } from '../shared/pages.js';

/** Why a held sync stopped waiting: its lock hung up (docs/lock-sync.md). */
const LOCK_HUNG_UP = new Error('the lock closed the connection before its held sync was answered');

const securedObjectRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.get(
    '/securedobjects/:id/sync',
    {
      config: { scope: 'sync' },
      schema: {
        tags: ['Secured objects'],
        security: [{ bearer: ['sync'] }],
        operationId: 'syncSecuredObject',
        summary: 'Sync an online lock',
        description:
          'Without `cursor`: the lock\'s current valid tickets, the revocations it still needs (of tickets whose credential ' +
          'may still be valid, docs/api-reference.md 8.2) and the tenant\'s key set. With the `cursor` of the previous answer: ' +
          'only what changed after it, with `keys` when the key set changed; nothing changed answers empty arrays and the ' +
          'same cursor. Large answers are cut at `limit` with `Link: rel="next"`. Needs a client bound to this lock, or an ' +
          'unbound one. A deleted lock\'s client still syncs the revocations its deletion caused, with `decommissioned: true`. ' +
          'A sync with a cursor tells the server the lock has applied everything the cursor reached (docs/api-reference.md 8.4): ' +
          'ask again after applying an answer, so the operator sees the revocations arrive. When too many locks sync at once ' +
          'the answer may be `503` with a jittered `Retry-After`: retry with exponential backoff and full jitter, never sooner ' +
          '(docs/lock-sync.md). With `wait` (seconds, at most 30) a sync with nothing new is held open and answers as soon as ' +
          'anything for the lock changes (a lockdown, a ticket, a revocation), else empty at the deadline; an instance holding ' +
          'as many as it may answers `503` with `Retry-After`.',
        params: ObjectIdParams,
        querystring: SyncQuery,
        response: {
          200: withHeaders(SyncAnswerSchema, 'The changes and the cursor to continue from.', { Link: ResponseHeaders.nextPage }),
          ...problemResponses(404, 410, 414),
        },
      },
    },
    async (request, reply) => {
      const { limit, cursor, wait } = request.query;
      // A held sync whose lock hung up stops waiting (docs/lock-sync.md): nothing is kept for an answer no one reads.
      // Made only for a sync that may wait: the nothing-new poll stays as cheap as before.
      let held: { seconds: number; signal: AbortSignal } | undefined;
      let hangUp: (() => void) | undefined;
      if (wait !== undefined && wait > 0) {
        const hungUp = new AbortController();
        // Aborted with a reason of its own: without one, abort() makes a DOMException, stack and all, which a
        // lockdown answering 10,000 held syncs paid for 10,000 times (docs/scaling.md).
        hangUp = () => hungUp.abort(LOCK_HUNG_UP);
        reply.raw.once('close', hangUp);
        // Gone before it was listened for (while its token was checked): the close came already.
        if (request.raw.socket?.destroyed) hangUp();
        held = { seconds: wait, signal: hungUp.signal };
      }
      let synced;
      try {
        synced = await services.lockSyncs.sync(request.auth.tenantId, request.auth, request.params.id, limit, cursor, held);
      } finally {
        // Answered: the connection's close after the answer aborts nothing.
        if (hangUp) reply.raw.off('close', hangUp);
      }
      const { more, ...answer } = synced;
      // An answer cut at `limit` names the next request like a page does (docs/api-reference.md 7.3).
      if (more) linkNextPage(request, reply, answer.cursor);
      return answer;
    },
  );

  app.get(
    '/securedobjects/:id/trust',
    {
      config: { scope: 'sync' },
      schema: {
        tags: ['Secured objects'],
        security: [{ bearer: ['sync'] }],
        operationId: 'getLockTrust',
        summary: 'What an installer writes into the lock',
        description:
          'The tenant\'s credential issuer, the lock\'s id, the tenant\'s ticket key set and the longest credential lifetime ' +
          '(docs/api-reference.md 8.1). A lock provisioned with these accepts only its own tenant\'s credentials. Needs the ' +
          'client bound to this lock; later key changes reach the lock through sync and revocation lists.',
        params: ObjectIdParams,
        response: {
          200: { ...TrustSchema, description: 'The lock\'s trust anchors.' },
          ...problemResponses(404, 410, 414),
        },
      },
    },
    async (request) => services.lockSyncs.trust(request.auth.tenantId, request.auth, request.params.id),
  );
};

export default securedObjectRoutes;
