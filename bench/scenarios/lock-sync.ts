// Scenario for lock sync with nothing new (docs/api-reference.md 6.2): the request an online lock repeats all day.
import type { Scenario, ScenarioContext } from '../types.js';
import { accessToken, issueTicket, operatorFixture } from './fixtures.js';

/** A lock-bound client's token and the cursor of its first sync: what every measured request then repeats. */
async function syncedLock(context: ScenarioContext, tenantName: string) {
  const fixture = await operatorFixture(context, tenantName);
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
  const headers = { authorization: `Bearer ${await accessToken(context, lockClient)}` };
  const path = `/deviceapi/securedobjects/${encodeURIComponent(fixture.securedObjectId)}/sync`;
  const first = await context.request({ url: context.appUrl, method: 'GET', path, headers });
  const cursor = (first.body as { cursor: string }).cursor;
  return { path: `${path}?cursor=${encodeURIComponent(cursor)}`, headers };
}

export const lockSyncScenarios: Scenario[] = [
  {
    name: 'GET /deviceapi/securedobjects/{id}/sync (nothing new)',
    method: 'GET',
    path: '/deviceapi/securedobjects/{id}/sync',
    baseline: 'hello',
    // docs/lock-sync.md: answered from the change watermark, without the database.
    goalRatio: 0.5,
    // Answered from memory after the client's look-up: on Citus as here.
    citus: { goalRatio: 0.5 },
    setup: (context) => syncedLock(context, 'bench-lock-sync'),
  },
  {
    // Against the ceiling of a route answering from PostgreSQL here (see the ticket read); no goal.
    name: 'GET /deviceapi/securedobjects/{id}/sync (nothing new, vs bare select)',
    method: 'GET',
    path: '/deviceapi/securedobjects/{id}/sync',
    baseline: 'select',
    setup: (context) => syncedLock(context, 'bench-lock-sync-select'),
  },
];
