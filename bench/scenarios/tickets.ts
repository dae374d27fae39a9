// Scenarios for tickets: read one (GET /operatorapi/tickets/{id}) and issue one (POST /operatorapi/tickets).
import { newTicketBody } from '../requests.js';
import type { Scenario } from '../types.js';
import { issueTicket, operatorFixture } from './fixtures.js';

export const ticketScenarios: Scenario[] = [
  {
    name: 'GET /operatorapi/tickets/{id}',
    method: 'GET',
    path: '/operatorapi/tickets/{id}',
    baseline: 'hello',
    goalRatio: 0.25,
    async setup(context) {
      const fixture = await operatorFixture(context, 'bench-get-ticket');
      const id = await issueTicket(context, fixture);
      return { path: `/operatorapi/tickets/${id}`, headers: fixture.headers };
    },
  },
  {
    // The same read against the ceiling of any route answering from PostgreSQL here: no goal, it says how much of
    // the gap to hello-world is the database round trip itself.
    name: 'GET /operatorapi/tickets/{id} (vs bare select)',
    method: 'GET',
    path: '/operatorapi/tickets/{id}',
    baseline: 'select',
    async setup(context) {
      const fixture = await operatorFixture(context, 'bench-get-ticket-select');
      const id = await issueTicket(context, fixture);
      return { path: `/operatorapi/tickets/${id}`, headers: fixture.headers };
    },
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
