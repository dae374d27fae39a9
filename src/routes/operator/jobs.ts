// /operatorapi/jobs: bulk jobs (docs/api-reference.md 14). Send many items at once, JSON or CSV; watch the job; page
// the result of every item; cancel what has not run.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type TSchema } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { BadRequestError, ForbiddenError } from '../../errors.js';
import { bearerChallenge } from '../../plugins/bearer-auth.js';
import { toProblem } from '../../plugins/problem-details.js';
import { validatorCompiler } from '../../plugins/validation.js';
import { NewAccessPermissionSchema } from '../../schemas/access-permission.js';
import { ObjectIdParams, PageQuery, pageResponse, ResponseHeaders, withHeaders } from '../../schemas/common.js';
import { NewLockGroupSchema, NewResidentSchema } from '../../schemas/group.js';
import { CsvBodySchema, JobQuery, JobResultQuery, JobResultSchema, JobSchema, NewJobSchema } from '../../schemas/job.js';
import { NewMobileDeviceSchema } from '../../schemas/mobile-device.js';
import { problemResponses } from '../../schemas/problem.js';
import { NewSecuredObjectSchema } from '../../schemas/secured-object.js';
import { NewTicketSchema } from '../../schemas/ticket.js';
import type { Services } from '../../services/index.js';
import { problemOf, type ItemValidator, type JobInput } from '../../services/job.service.js';
import { JOB_TYPE_SCOPES, type JobType } from '../../shared/bulk-jobs.js';
import { actionContext } from '../shared/context.js';
import { resourcePath } from '../shared/headers.js';
import { sendPage } from '../shared/pages.js';

const tags = ['Jobs'];

/** The body each item is checked against: its single-item endpoint's (docs/api-reference.md 4.1-4.3, 5). */
const ITEM_SCHEMAS: Record<JobType, TSchema> = {
  'secured-objects': NewSecuredObjectSchema,
  'mobile-devices': NewMobileDeviceSchema,
  residents: NewResidentSchema,
  'lock-groups': NewLockGroupSchema,
  'access-permissions': NewAccessPermissionSchema,
  tickets: NewTicketSchema,
};

type Check = ((value: unknown) => boolean) & { errors?: unknown };
const checks = new Map<JobType, Check>();
function checkOf(type: JobType): Check {
  let check = checks.get(type);
  if (!check) {
    check = validatorCompiler({ schema: ITEM_SCHEMAS[type], httpPart: 'body', method: 'POST', url: '/operatorapi/jobs' }) as unknown as Check;
    checks.set(type, check);
  }
  return check;
}

/** An item checked as its endpoint checks its body: the same validator, the same 400 problem. */
const validateItem: ItemValidator = (type, item) => {
  const check = checkOf(type);
  if (check(item)) return null;
  const failure = Object.assign(new Error('validation'), { validation: check.errors, validationContext: 'body' });
  return problemOf(toProblem(failure));
};

/** docs/api-reference.md 14: the scope of what the job creates, besides `devices:write` (checked by the route). */
function requireTypeScope(request: FastifyRequest, type: JobType): void {
  const scope = JOB_TYPE_SCOPES[type];
  if (request.auth.scopes.has(scope)) return;
  throw new ForbiddenError(`A job of ${type} needs the scope ${scope}.`, {
    'www-authenticate': bearerChallenge('operatorapi', { code: 'insufficient_scope', scope }),
  });
}

/** The charset parameter of a Content-Type, lower-cased; null when absent. */
function charsetOf(contentType: string | undefined): string | null {
  const match = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType ?? '');
  return match ? match[1]!.toLowerCase() : null;
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

const jobRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { maxBytes } = services.jobs;

  // docs/api-reference.md 14: CSV is UTF-8 only. A charset other than UTF-8, or bytes that are not UTF-8, is a 400
  // naming it, before anything is read from it. A byte-order mark (as spreadsheets write) is dropped.
  app.addContentTypeParser('text/csv', { parseAs: 'buffer', bodyLimit: maxBytes }, (request, body, done) => {
    const charset = charsetOf(request.headers['content-type']);
    if (charset !== null && charset !== 'utf-8' && charset !== 'utf8') {
      done(new BadRequestError(`The CSV body is declared ${charset}: send it as UTF-8 (charset=utf-8).`, [{ field: 'Content-Type', message: `charset ${charset} is not UTF-8` }]));
      return;
    }
    try {
      done(null, utf8.decode(body as Buffer));
    } catch {
      const offset = firstInvalidUtf8(body as Buffer);
      done(new BadRequestError(`The CSV body is not UTF-8: byte ${offset} is not part of a UTF-8 character. Save it as CSV UTF-8.`, [{ field: 'body', message: 'is not UTF-8' }]));
    }
  });

  app.post(
    '/jobs',
    {
      bodyLimit: maxBytes,
      config: { scope: 'devices:write', idempotent: true, bodyLimitSetting: 'JOB_MAX_BYTES' },
      schema: {
        tags,
        security: [{ bearer: ['devices:write'] }],
        operationId: 'createJob',
        summary: 'Send a bulk job',
        description:
          'Stores the items and answers at once (`202`); an instance then applies them one by one, each as its single-item ' +
          'endpoint would (same validation, problems, audit and events). JSON `{type, items}`, or a `text/csv` body with ' +
          '`?type=` (RFC 4180, UTF-8, a header row naming the columns in any order). Needs `devices:write` and the scope of ' +
          'what the type creates (`device-groups:write` for residents and lock groups, `access-permissions:write`, ' +
          '`tokens:create` for tickets). At most `JOB_MAX_ITEMS` items and `JOB_MAX_BYTES` bytes; a tenant has at most ' +
          '`JOB_MAX_ACTIVE_PER_TENANT` jobs queued or running (`429`). Send `Idempotency-Key` to make retries safe.',
        headers: Type.Object({ 'idempotency-key': Type.Optional(Type.String({ description: 'Makes the request safe to retry (24 h).' })) }),
        querystring: JobQuery,
        body: {
          content: {
            'application/json': { schema: NewJobSchema },
            'text/csv': { schema: CsvBodySchema },
          },
        },
        response: {
          202: withHeaders(JobSchema, 'The job, queued.', { Location: ResponseHeaders.location, 'Retry-After': ResponseHeaders.retryAfter }),
          ...problemResponses(409, 413, 415, 422, 429),
        },
      },
    },
    async (request, reply) => {
      const input = jobInput(request.body, request.query.type);
      requireTypeScope(request, input.type);
      const job = await services.jobs.submit(actionContext(request), input, validateItem);
      return reply
        .code(202)
        .header('location', resourcePath`/operatorapi/jobs/${job.id}`)
        .header('retry-after', String(services.jobs.retryAfterSeconds))
        .send(job);
    },
  );

  app.get(
    '/jobs',
    {
      config: { scope: 'devices:read' },
      schema: {
        tags,
        security: [{ bearer: ['devices:read'] }],
        operationId: 'listJobs',
        summary: 'List bulk jobs',
        description: 'The tenant\'s jobs, oldest first. Pages follow `Link: rel="next"`.',
        querystring: PageQuery,
        response: { 200: pageResponse(JobSchema, 'A page of jobs.'), ...problemResponses() },
      },
    },
    async (request, reply) => sendPage(request, reply, await services.jobs.list(request.auth.tenantId, request.query.limit, request.query.cursor)),
  );

  app.get(
    '/jobs/:id',
    {
      config: { scope: 'devices:read' },
      schema: {
        tags,
        security: [{ bearer: ['devices:read'] }],
        operationId: 'getJob',
        summary: 'Read a bulk job',
        description: 'The job\'s state and counts: poll it (`Retry-After` of the create says how often) until `finishedTime` is set.',
        params: ObjectIdParams,
        response: { 200: { ...JobSchema, description: 'The job.' }, ...problemResponses(404) },
      },
    },
    async (request) => services.jobs.get(request.auth.tenantId, request.params.id),
  );

  app.get(
    '/jobs/:id/results',
    {
      config: { scope: 'devices:read' },
      schema: {
        tags,
        security: [{ bearer: ['devices:read'] }],
        operationId: 'listJobResults',
        summary: 'Page the results of a bulk job',
        description:
          'One result per item that has run (and per item refused when the job was sent), in item order; `outcome=failed` ' +
          'lists only the refused ones, each with the problem its single-item endpoint answers.',
        params: ObjectIdParams,
        querystring: JobResultQuery,
        response: { 200: pageResponse(JobResultSchema, 'A page of results.'), ...problemResponses(404) },
      },
    },
    async (request, reply) =>
      sendPage(
        request,
        reply,
        await services.jobs.results(request.auth.tenantId, request.params.id, request.query.outcome, request.query.limit, request.query.cursor),
      ),
  );

  app.delete(
    '/jobs/:id',
    {
      config: { scope: 'devices:write' },
      schema: {
        tags,
        security: [{ bearer: ['devices:write'] }],
        operationId: 'cancelJob',
        summary: 'Cancel a bulk job',
        description:
          'Cancels what has not run: the items already applied stay. Answers the job, now `cancelled` (with `job.finished`); ' +
          'a job already finished answers as it is. An erasure\'s job (docs/api-reference.md 16.2) runs to its end: `409`.',
        params: ObjectIdParams,
        response: { 200: { ...JobSchema, description: 'The job.' }, ...problemResponses(404, 409, 413, 414, 415) },
      },
    },
    async (request) => services.jobs.cancel(actionContext(request), request.params.id),
  );
};

/** The job as sent: a JSON body names its type; a CSV body's type is `?type=`. */
function jobInput(body: unknown, queryType: JobType | undefined): JobInput {
  if (typeof body === 'string') {
    if (queryType === undefined) {
      throw new BadRequestError('A CSV body needs ?type= naming what its records are.', [{ field: 'type', message: 'is required with a CSV body' }]);
    }
    return { type: queryType, csv: body };
  }
  const json = body as { type: JobType; items: unknown[] };
  if (queryType !== undefined && queryType !== json.type) {
    throw new BadRequestError(`?type=${queryType} differs from the body's type ${json.type}.`, [{ field: 'type', message: 'differs from the body' }]);
  }
  return { type: json.type, items: json.items };
}

/** Where the first byte that is not UTF-8 is, for the problem's detail. */
function firstInvalidUtf8(bytes: Buffer): number {
  let low = 0;
  let high = bytes.length;
  // The longest prefix that decodes: a binary search over prefixes (a cut inside a character also fails to decode,
  // so the search lands at the start of the first bad sequence, give or take the bytes of one character).
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(0, middle), { stream: true });
      low = middle;
    } catch {
      high = middle - 1;
    }
  }
  return low;
}

export default jobRoutes;
