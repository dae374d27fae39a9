// /operatorapi/settings: the tenant's settings (docs/api-reference.md 11.2, 16.1): the holder-binding policy of its locks
// and how long its records are kept.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { SettingsChangesSchema, SettingsSchema } from '../../schemas/settings.js';
import { problemResponses } from '../../schemas/problem.js';
import type { Services } from '../../services/index.js';
import { actionContext } from '../shared/context.js';

const tags = ['Settings'];

const settingsRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.get(
    '/settings',
    {
      config: { scope: 'settings:manage' },
      schema: {
        tags,
        security: [{ bearer: ['settings:manage'] }],
        operationId: 'getSettings',
        summary: 'Read the tenant\'s settings',
        description:
          'The holder-binding policy every lock of the tenant applies unless it has its own (docs/api-reference.md 11.2), and ' +
          'the retention periods in force (docs/api-reference.md 16.1).',
        response: { 200: { ...SettingsSchema, description: 'The settings.' }, ...problemResponses() },
      },
    },
    async (request) => services.settings.read(request.auth.tenantId),
  );

  app.patch(
    '/settings',
    {
      config: { scope: 'settings:manage', idempotent: true },
      schema: {
        tags,
        security: [{ bearer: ['settings:manage'] }],
        operationId: 'updateSettings',
        summary: 'Change the tenant\'s settings',
        description:
          '`holderBinding` `required` makes every lock without a policy of its own refuse credentials not bound to a phone ' +
          'key (docs/api-reference.md 11.2); move to it once the tenant\'s phones have registered keys. The change reaches ' +
          'online locks at their next sync and the others with the next revocation list a phone brings. `retention` sets ' +
          'how many days access-log entries, events and audit entries are kept (`null`: the instance\'s default again); ' +
          'the background prune applies a shorter period within minutes (docs/api-reference.md 16.1). Send ' +
          '`Idempotency-Key` to make retries safe.',
        headers: Type.Object({ 'idempotency-key': Type.Optional(Type.String({ description: 'Makes the request safe to retry (24 h).' })) }),
        body: SettingsChangesSchema,
        response: { 200: { ...SettingsSchema, description: 'The settings.' }, ...problemResponses(413, 415, 422) },
      },
    },
    async (request) => services.settings.update(actionContext(request), request.body),
  );
};

export default settingsRoutes;
