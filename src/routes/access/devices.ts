// /v1/mobiledevices and /v1/securedobjects (docs/api-reference.md 5): what the property-management app may group.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { MobileDeviceSchema } from '../../schemas/mobile-device.js';
import { SecuredObjectSchema } from '../../schemas/secured-object.js';
import { PageQuery, pageResponse } from '../../schemas/common.js';
import { problemResponses } from '../../schemas/problem.js';
import type { Services } from '../../services/index.js';
import { sendPage } from '../shared/pages.js';

const config = { scope: 'devices:read' };
const security = [{ bearer: ['devices:read'] }];

const deviceListingRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.get(
    '/mobiledevices',
    {
      config,
      schema: {
        tags: ['Devices'],
        security,
        operationId: 'listMobileDevicesForAccess',
        summary: 'List mobile devices',
        description: 'The tenant\'s mobile devices (registered through the Operator API), oldest first.',
        querystring: PageQuery,
        response: {
          200: pageResponse(MobileDeviceSchema, 'A page of mobile devices.'),
          ...problemResponses(),
        },
      },
    },
    async (request, reply) =>
      sendPage(request, reply, await services.mobileDevices.list(request.auth.tenantId, request.query.limit, request.query.cursor)),
  );

  app.get(
    '/securedobjects',
    {
      config,
      schema: {
        tags: ['Devices'],
        security,
        operationId: 'listSecuredObjectsForAccess',
        summary: 'List secured objects',
        description: 'The tenant\'s secured objects (locks), oldest first.',
        querystring: PageQuery,
        response: {
          200: pageResponse(SecuredObjectSchema, 'A page of secured objects.'),
          ...problemResponses(),
        },
      },
    },
    async (request, reply) =>
      sendPage(request, reply, await services.securedObjects.list(request.auth.tenantId, request.query.limit, request.query.cursor)),
  );
};

export default deviceListingRoutes;
