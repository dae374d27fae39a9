// /operatorapi/erasures: erasing a person's data on request (docs/api-reference.md 16.2), scope `settings:manage`.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { PageQuery, pageResponse, ResponseHeaders, withHeaders } from '../../schemas/common.js';
import { ErasureRequestSchema, ErasureSchema } from '../../schemas/erasure.js';
import { JobSchema } from '../../schemas/job.js';
import { problemResponses } from '../../schemas/problem.js';
import type { ErasureRecord } from '../../services/erasure.service.js';
import type { Services } from '../../services/index.js';
import { actionContext } from '../shared/context.js';
import { resourcePath } from '../shared/headers.js';
import { sendPage } from '../shared/pages.js';

const tags = ['Erasures'];
const security = [{ bearer: ['settings:manage'] }];
const config = { scope: 'settings:manage' };
/** Seconds a client waits before it reads an erasure again: most finish within it. */
const RETRY_AFTER_SECONDS = 2;

function toErasure(record: ErasureRecord) {
  return {
    id: record.id,
    subject: { kind: record.subjectKind, id: record.subjectId },
    accessLogsOnly: record.accessLogsOnly,
    state: record.state,
    requestedBy: record.requestedBy,
    requestedTime: record.requestedAt,
    ...(record.finishedAt !== null ? { finishedTime: record.finishedAt } : {}),
    rows: record.rowsChanged,
  };
}

const erasureRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.post(
    '/erasures',
    {
      config: { ...config, idempotent: true },
      schema: {
        tags,
        security,
        operationId: 'createErasure',
        summary: 'Erase a person\'s data',
        description:
          'Replaces every personal value of one resident, mobile device or user (names, device names, client names, the ' +
          'username) with a pseudonym wherever the service keeps it (the records themselves, events and audit entries, ' +
          'cached answers, webhook delivery errors), and deletes their access-log entries; `accessLogsOnly` deletes the ' +
          'access logs alone. It runs in the background in bounded transactions: the answer is `202` with a bulk job of type ' +
          '`erasure` (one item: the person, by id) to read until `state` is `succeeded`. Ids, tickets, propagation and sequences stay as they are ' +
          '(docs/api-reference.md 16.2). Send `Idempotency-Key` to make retries safe.',
        headers: Type.Object({ 'idempotency-key': Type.Optional(Type.String({ description: 'Makes the request safe to retry (24 h).' })) }),
        body: ErasureRequestSchema,
        response: {
          202: withHeaders(JobSchema, 'The erasure\'s job, started: read it at `Location`, and the record of what was erased per table at `/operatorapi/erasures/{id}` (the same id).', {
            Location: ResponseHeaders.location,
            'Retry-After': ResponseHeaders.retryAfter,
          }),
          ...problemResponses(404, 413, 415),
        },
      },
    },
    async (request, reply) => {
      const { job } = await services.erasures.request(actionContext(request), request.body);
      return reply
        .code(202)
        .header('location', resourcePath`/operatorapi/jobs/${job.id}`)
        .header('retry-after', String(RETRY_AFTER_SECONDS))
        .send(job);
    },
  );

  app.get(
    '/erasures',
    {
      config,
      schema: {
        tags,
        security,
        operationId: 'listErasures',
        summary: 'List erasures',
        description: 'The tenant\'s erasures, newest first: the record of every request stays. Pages follow `Link: rel="next"`.',
        querystring: PageQuery,
        response: { 200: pageResponse(ErasureSchema, 'A page of erasures.'), ...problemResponses() },
      },
    },
    async (request, reply) => {
      const page = await services.erasures.list(request.auth.tenantId, request.query.limit, request.query.cursor);
      return sendPage(request, reply, { items: page.items.map(toErasure), nextCursor: page.nextCursor });
    },
  );

  app.get(
    '/erasures/:id',
    {
      config,
      schema: {
        tags,
        security,
        operationId: 'getErasure',
        summary: 'Read an erasure',
        description: 'What the erasure has done so far, per table, and whether it is finished.',
        params: Type.Object({ id: Type.String({ maxLength: 256, description: 'The erasure\'s id.' }) }),
        response: { 200: { ...ErasureSchema, description: 'The erasure.' }, ...problemResponses(404) },
      },
    },
    async (request) => toErasure(await services.erasures.get(request.auth.tenantId, request.params.id)),
  );
};

export default erasureRoutes;
