// Scenarios for tickets: read one (GET /operatorapi/tickets/{id}) and issue one (POST /operatorapi/tickets).
import { newTicketBody } from '../requests.js';
import type { Scenario, ScenarioContext } from '../types.js';
import { issueTicket, operatorFixture } from './fixtures.js';

/** A tenant of its own with one ticket: the request reads that ticket. */
async function ticketToRead(context: ScenarioContext, tenantName: string) {
  const fixture = await operatorFixture(context, tenantName);
  const id = await issueTicket(context, fixture);
  return { path: `/operatorapi/tickets/${id}`, headers: fixture.headers };
}

export const ticketScenarios: Scenario[] = [
  {
    name: 'GET /operatorapi/tickets/{id}',
    method: 'GET',
    path: '/operatorapi/tickets/{id}',
    baseline: 'hello',
    goalRatio: 0.25,
    setup: (context) => ticketToRead(context, 'bench-get-ticket'),
  },
  {
    // The same read against the ceiling of any route answering from PostgreSQL here: no goal, it says how much of
    // the gap to hello-world is the database round trip itself.
    name: 'GET /operatorapi/tickets/{id} (vs bare select)',
    method: 'GET',
    path: '/operatorapi/tickets/{id}',
    baseline: 'select',
    setup: (context) => ticketToRead(context, 'bench-get-ticket-select'),
  },
  {
    // Every request issues a new ticket (no Idempotency-Key): bearer check, validation, one INSERT with its audit event.
    name: 'POST /operatorapi/tickets',
    method: 'POST',
    path: '/operatorapi/tickets',
    baseline: 'insert',
    goalRatio: 0.6,
    async setup(context) {
      const fixture = await operatorFixture(context, 'bench-post-ticket');
      return { headers: fixture.headers, body: newTicketBody(fixture.securedObjectId, fixture.mobileDeviceId) };
    },
  },
];
