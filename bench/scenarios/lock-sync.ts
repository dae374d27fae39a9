// Scenario for lock sync with nothing new (contract 6.2): the request an online lock repeats all day.
import { basicAuthorization } from '../requests.js';
import type { Scenario } from '../types.js';
import { issueTicket, operatorFixture } from './fixtures.js';

export const lockSyncScenarios: Scenario[] = [
  {
    name: 'GET /deviceapi/securedobjects/{id}/sync (nothing new)',
    method: 'GET',
    path: '/deviceapi/securedobjects/{id}/sync',
    baseline: 'hello',
    goalRatio: 0.2,
    async setup(context) {
      const fixture = await operatorFixture(context, 'bench-lock-sync');
      await issueTicket(context, fixture);
      const lockClient = JSON.parse(
        await context.cli([
          'client',
          'create',
          '--tenant',
          fixture.credentials.tenant,
          '--scopes',
          'sync',
          '--secured-object',
          fixture.securedObjectId,
          '--json',
        ]),
      ) as { clientId: string; clientSecret: string };
      const token = await context.request({
        url: context.appUrl,
        method: 'POST',
        path: '/oauth/token',
        headers: {
          authorization: basicAuthorization(lockClient.clientId, lockClient.clientSecret),
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: 'grant_type=client_credentials',
      });
      const headers = { authorization: `Bearer ${(token.body as { access_token: string }).access_token}` };
      const path = `/deviceapi/securedobjects/${encodeURIComponent(fixture.securedObjectId)}/sync`;
      const first = await context.request({ url: context.appUrl, method: 'GET', path, headers });
      const cursor = (first.body as { cursor: string }).cursor;
      return { path: `${path}?cursor=${encodeURIComponent(cursor)}`, headers };
    },
  },
];
