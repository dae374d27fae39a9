// POST /deviceapi/securedobjects/{id}/accesslog and /deviceapi/mobiledevices/{id}/accesslog (docs/api-reference.md 8.5): a lock's
// access log, uploaded by the lock itself or relayed by a phone.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { LockAccessLogUploadSchema, RelayedAccessLogUploadSchema, UploadAnswerSchema } from '../../schemas/access-log.js';
import { ObjectIdParams } from '../../schemas/common.js';
import { problemResponses } from '../../schemas/problem.js';
import type { Services } from '../../services/index.js';

const ANSWER =
  'Answers how many entries were stored (`accepted`), how many were already stored or repeated (`duplicates`), and the ' +
  'ranges of entry numbers still missing (`gaps`). Idempotent: sending an upload again stores nothing twice. A lock\'s ' +
  'uploaders together store at most ACCESS_LOG_ENTRIES_PER_LOCK_PER_MINUTE new entries a minute: an upload beyond it is ' +
  'refused whole with 429 and `Retry-After` (re-sent entries cost nothing).';

const accessLogRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.post(
    '/securedobjects/:id/accesslog',
    {
      config: { scope: 'sync' },
      schema: {
        tags: ['Secured objects'],
        security: [{ bearer: ['sync'] }],
        operationId: 'uploadLockAccessLog',
        summary: 'Upload the lock\'s access log',
        description:
          'An online lock uploads the decisions it logged (docs/api-reference.md 8.5), with `appliedSerial` (how far it has ' +
          'applied the change log, docs/api-reference.md 8.4) and `lockTime` (its clock now, for its clock offset). Needs the ' +
          `client bound to this lock; a deleted lock's client only syncs. ${ANSWER}`,
        params: ObjectIdParams,
        body: LockAccessLogUploadSchema,
        response: {
          200: { ...UploadAnswerSchema, description: 'What the upload stored and what is still missing.' },
          ...problemResponses(404, 410, 413, 415),
        },
      },
    },
    async (request) => services.accessLogs.uploadFromLock(request.auth.tenantId, request.auth, request.params.id, request.body),
  );

  app.post(
    '/mobiledevices/:id/accesslog',
    {
      config: { scope: 'tokens:download' },
      schema: {
        tags: ['Mobile devices'],
        security: [{ bearer: ['tokens:download'] }],
        operationId: 'relayAccessLog',
        summary: 'Relay a lock\'s access log',
        description:
          'A phone relays what a lock that is never online gave it (docs/api-reference.md 8.5), for a lock the phone holds or ' +
          'has held a ticket for; any other lock answers 404. `receipts` signed by the lock\'s registered key are the lock\'s ' +
          'own word: they acknowledge revocations, feed the clock estimate and store their entries as `signed`. Plain ' +
          '`entries` are the phone\'s report: stored apart from the lock\'s numbering, they acknowledge nothing, never move ' +
          'the clock estimate and report no gaps. A receipt that fails verification answers 400 and nothing is stored. ' +
          `Needs the client bound to this device. ${ANSWER}`,
        params: ObjectIdParams,
        body: RelayedAccessLogUploadSchema,
        response: {
          200: { ...UploadAnswerSchema, description: 'What the upload stored and what is still missing.' },
          ...problemResponses(404, 410, 413, 415),
        },
      },
    },
    async (request) => services.accessLogs.uploadFromPhone(request.auth.tenantId, request.auth, request.params.id, request.body),
  );
};

export default accessLogRoutes;
