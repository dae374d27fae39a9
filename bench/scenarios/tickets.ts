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
    // The same read against the ceiling of any route answering from PostgreSQL here: what the service's own work
    // (bearer check, rate limit, metrics, request id, problem-details guard, schema serialisation) costs on top of
    // the same prepared SELECT. Goal: at least 0.8 of the bare route.
    name: 'GET /operatorapi/tickets/{id} (vs bare select)',
    method: 'GET',
    path: '/operatorapi/tickets/{id}',
    baseline: 'select',
    goalRatio: 0.8,
    // A single-shard read: on Citus one more hop (coordinator to worker), at least half the rate here.
    citus: { goalRatio: 0.5 },
    setup: (context) => ticketToRead(context, 'bench-get-ticket-select'),
  },
  {
    // Past one process: two of the service on the one PostgreSQL, a client alternating its connections between them
    // (half each, as a round-robin balancer spreads them), on the same two cores. No goal: it shows what a second
    // process buys when the machine, not the process, is the limit.
    name: 'GET /operatorapi/tickets/{id} (2 instances, round-robin)',
    method: 'GET',
    path: '/operatorapi/tickets/{id}',
    baseline: 'select',
    instances: 2,
    setup: (context) => ticketToRead(context, 'bench-get-ticket-two-instances'),
  },
  {
    // Every request issues a new ticket (no Idempotency-Key): bearer check, validation, one INSERT with its audit event.
    name: 'POST /operatorapi/tickets',
    method: 'POST',
    path: '/operatorapi/tickets',
    baseline: 'insert',
    goalRatio: 0.6,
    // A transaction of single-shard statements; on Citus each is a hop, and the commit one more.
    citus: {},
    async setup(context) {
      const fixture = await operatorFixture(context, 'bench-post-ticket');
      return { headers: fixture.headers, body: newTicketBody(fixture.securedObjectId, fixture.mobileDeviceId) };
    },
  },
];
