// /operatorapi/schedules/preview: what a schedule does on a lock's wall clock, DST nights included (docs/api-reference.md 9).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { problemResponses } from '../../schemas/problem.js';
import { SchedulePreviewRequestSchema, SchedulePreviewSchema } from '../../schemas/schedule.js';
import type { Services } from '../../services/index.js';
import { previewSchedule } from '../../shared/schedule/preview.js';
import { MAX_EXPANSION_DAYS } from '../../shared/schedule/types.js';

const scheduleRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app) => {
  app.post(
    '/schedules/preview',
    {
      config: { scope: 'tokens:read' },
      schema: {
        tags: ['Tickets'],
        security: [{ bearer: ['tokens:read'] }],
        operationId: 'previewSchedule',
        summary: 'Preview a schedule',
        description:
          'The UTC intervals within `[from, to)` in which the schedule is open on the wall clock of `timeZone`, each with ' +
          'its local start and end and the UTC offsets in force there, so an operator sees what a DST night does (a ' +
          'window on a spring-forward night is shorter, on a fall-back night longer). These are the intervals a ' +
          `credential carries as \`win\`. Changes nothing. At most ${MAX_EXPANSION_DAYS} days at once; an invalid ` +
          'schedule, an unknown zone or an empty range is a 422 naming every bad field.',
        body: SchedulePreviewRequestSchema,
        response: {
          200: { ...SchedulePreviewSchema, description: 'The intervals, in order.' },
          ...problemResponses(413, 415, 422),
        },
      },
    },
    async (request) => previewSchedule(request.body),
  );
};

export default scheduleRoutes;
