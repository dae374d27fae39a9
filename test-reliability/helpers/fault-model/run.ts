// One run of the model: a tenant of its own on the service, its locks, phones and webhook receiver, then `steps` steps
// of one operation each (sometimes under a fault), every invariant checked after every step, and at the end a drain
// in which every committed event must reach the receiver. Violations carry the seed and the step.
import type { Queryable } from '../../../src/db/database.js';
import { secretsKeyOf } from '../../../src/shared/crypto.js';
import { EVENT_TYPES } from '../../../src/shared/event-types.js';
import { insertWebhook } from '../../../test/helpers/webhooks.js';
import { spawnNode } from '../../../test/helpers/process.js';
import { SECRETS_KEY, sleep } from '../server.js';
import { nextFault, restartDue, withFault, type FaultState } from './faults.js';
import { checkDeliveries, checkNothingLost, checkServiceView, type InvariantName, type Violation } from './invariants.js';
import { addGroups, addLock, addPhone, download, nextOperation, runOperation, type Context, type OperationName } from './operations.js';
import { prng } from './prng.js';
import { startModelReceiver } from './receiver.js';
import { clientToken, request, type Service } from './service.js';
import type { Breakage, World } from './world.js';

export interface RunOptions {
  seed: number;
  steps: number;
  breakage?: Breakage;
  /** Stop at the first step with a violation of this invariant (the tests that break a guarantee on purpose). */
  stopAt?: InvariantName;
  /** Whether kill -9 is among the faults (a restart costs seconds: the runs that break a guarantee leave it out). */
  kills?: boolean;
  locks?: number;
  phones?: number;
  /** The chance of a fault on a step. */
  faultRate?: number;
  /** Operations to pick more often, as weights added to the usual ones. */
  favour?: Partial<Record<OperationName, number>>;
  /** Every step's line (the long run prints them); violations and errors are always printed. */
  verbose?: boolean;
  print?: (line: string) => void;
}

export interface Finding extends Violation {
  seed: number;
  step: number;
}

export interface RunReport {
  seed: number;
  steps: number;
  findings: Finding[];
  /** Operations the service answered unexpectedly: not an invariant, still a failure. */
  errors: string[];
  counts: Record<string, number>;
  ms: number;
}

/** How a violation is printed: the seed and the step first, so that a run can be repeated. */
export const describeFinding = (finding: Finding) => `[fault model] seed ${finding.seed} step ${finding.step} ${finding.invariant}: ${finding.detail}`;

export async function runModel(service: Service, options: RunOptions): Promise<RunReport> {
  const started = Date.now();
  const print = options.print ?? ((line: string) => process.stdout.write(`${line}\n`));
  const random = prng(options.seed);
  const name = `faults-${options.seed}-${options.breakage ?? 'sound'}-${Date.now().toString(36)}`;
  const tenant = await createTenant(service, name);
  const db = service.db;
  const queryable: Queryable = {
    async query<Row>(text: string, params?: readonly unknown[]) {
      const result = await db.query(text, params as unknown[] | undefined);
      return { rows: result.rows as Row[], rowCount: result.rowCount ?? 0 };
    },
  };
  const tenantId = (await db.query<{ id: string }>('SELECT id FROM tenants WHERE name = $1', [name])).rows[0]!.id;
  const receiver = await startModelReceiver({ drop: options.breakage === 'receiver-drops' });
  const webhook = await insertWebhook(queryable, secretsKeyOf(Buffer.from(SECRETS_KEY, 'hex')), tenantId, receiver.url, [...EVENT_TYPES]);
  const firstSeq =
    Number((await db.query<{ through: string }>('SELECT dispatched_through AS through FROM webhooks WHERE tenant_id = $1 AND id = $2', [tenantId, webhook.id])).rows[0]!.through) + 1;

  const management = tenant;
  const world: World = {
    seed: options.seed,
    breakage: options.breakage,
    tenantId,
    tenantName: name,
    operator: await clientToken(service, management),
    manager: '',
    locks: [],
    phones: [],
    tickets: new Map(),
    keyRevokedAt: new Map(),
    lockdowns: [],
    eventHighWater: { count: 0, maxSeq: 0 },
    access: await accessCaller(service, tenant, name),
    resident: { id: '', deviceIds: new Set() },
    lockGroup: { id: '', lockIds: new Set() },
    counts: {},
    nextDevice: 0,
    nextLock: 0,
  };
  const ctx: Context = { service, world, random, found: [], maxSerialSeen: 0 };
  const findings: Finding[] = [];
  const errors: string[] = [];
  const report = (step: number, violations: Violation[]) => {
    for (const violation of violations) {
      const finding = { ...violation, seed: options.seed, step };
      findings.push(finding);
      print(describeFinding(finding));
    }
  };

  const managerClient = await request(service, (live) => live[0]!, 'POST', '/operatorapi/oauthclients', world.operator, { name: 'model manager', scopes: ['lockdown:manage', 'tokens:create', 'keys:rotate'] });
  if (managerClient.status !== 201) throw new Error(`manager client: ${managerClient.status} ${JSON.stringify(managerClient.body)}`);
  world.manager = await clientToken(service, managerClient.body as { clientId: string; clientSecret: string });
  const lockCount = options.locks ?? 4;
  for (let index = 1; index <= lockCount; index++) world.locks.push(await addLock(ctx, `door-${index}`, index <= Math.ceil(lockCount / 2)));
  world.nextLock = lockCount;
  for (let index = 0; index < (options.phones ?? 4); index++) await addPhone(ctx);
  await addGroups(ctx);
  // Every phone starts with a ticket it has downloaded, so that the first steps already reach doors.
  for (const phone of [...world.phones]) {
    await runOperation(ctx, 'issue', 0, phone);
    await download(ctx, phone);
  }
  print(`[fault model] seed ${options.seed} tenant ${name}${options.breakage ? ` broken on purpose: ${options.breakage}` : ''}`);

  const faults: FaultState = {};
  let step = 0;
  for (step = 1; step <= options.steps; step++) {
    const stepStarted = Date.now();
    const restarted = await restartDue(ctx, faults, step);
    const operation = nextOperation(random, options.favour);
    const fault = nextFault(ctx, faults, options.faultRate ?? 0.2, options.kills ?? true);
    let line: string;
    try {
      line = await withFault(ctx, faults, fault, step, () => runOperation(ctx, operation, step));
    } catch (error) {
      line = `${operation} failed: ${String(error)}`;
      errors.push(`seed ${options.seed} step ${step}: ${line}`);
      print(`[fault model] seed ${options.seed} step ${step} error: ${line}`);
    }
    if (options.verbose) print(`[fault model] seed ${options.seed} step ${step} (${Date.now() - stepStarted} ms): ${restarted ? `${restarted}; ` : ''}${line}`);
    if (options.breakage === 'lose-committed-event' && step === 3) {
      await db.query('DELETE FROM audit_events WHERE tenant_id = $1 AND seq = (SELECT max(seq) FROM audit_events WHERE tenant_id = $1)', [tenantId]);
    }
    const violations = ctx.found.splice(0);
    violations.push(...(await checkServiceView(world, service)));
    violations.push(...(await checkDeliveries(world, service, receiver, firstSeq, false)));
    violations.push(...(await checkNothingLost(world, service, receiver)));
    report(step, violations);
    if (options.stopAt && findings.some((finding) => finding.invariant === options.stopAt)) break;
  }
  const last = Math.min(step, options.steps);

  // The drain: every instance back, then every committed event must arrive.
  await restartDue(ctx, faults, last, true);
  if (!options.stopAt) {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const { rows } = await db.query<{ n: string }>('SELECT count(*) AS n FROM audit_events WHERE tenant_id = $1 AND seq >= $2', [tenantId, firstSeq]);
      const delivered = new Set(receiver.deliveries.map((delivery) => delivery.sequence)).size;
      if (delivered >= Number(rows[0]!.n) || Date.now() > deadline) break;
      await sleep(200);
    }
    report(last, await checkDeliveries(world, service, receiver, firstSeq, true));
    report(last, await checkNothingLost(world, service, receiver));
  }
  await receiver.close();
  const ms = Date.now() - started;
  print(`[fault model] seed ${options.seed}: ${last} steps in ${ms} ms, ${findings.length} violations, ${errors.length} errors; ${JSON.stringify(world.counts)}`);
  return { seed: options.seed, steps: last, findings, errors, counts: world.counts, ms };
}

/** The invariant each breakage must trip. */
export const CAUGHT_BY: Record<Breakage, InvariantName> = {
  // The lock's next sync acknowledges what it skipped: the service then shows the revocation applied (docs/api-reference.md 8.4).
  'sync-skips-revocations': 'service-not-ahead',
  'lock-ignores-phone-list': 'revocation-known',
  'lock-ignores-lock-state': 'lockdown-learnt',
  'receipt-overclaims': 'service-not-ahead',
  'receiver-drops': 'events-delivered',
  'lose-committed-event': 'nothing-lost',
};

/** The tenant's Access API caller: a client with the Access API's scopes and a user (docs/api-reference.md 3.2, 3.7). */
async function accessCaller(service: Service, management: { clientId: string; clientSecret: string }, tenantName: string): Promise<World['access']> {
  const operator = await clientToken(service, management);
  const first = (live: { name: string }[]) => live[0]!;
  const scopes = ['device-groups:write', 'device-groups:read', 'access-permissions:write', 'access-permissions:read', 'devices:read'];
  const client = await request(service, first as never, 'POST', '/operatorapi/oauthclients', operator, { name: 'model access', scopes });
  if (client.status !== 201) throw new Error(`access client: ${client.status} ${JSON.stringify(client.body)}`);
  const password = 'model user password, long enough';
  const user = await request(service, first as never, 'POST', '/operatorapi/users', operator, { username: 'model', password });
  if (user.status !== 201) throw new Error(`access user: ${user.status} ${JSON.stringify(user.body)}`);
  return { client: client.body as { clientId: string; clientSecret: string }, login: `model@${tenantName}`, password };
}

/** `acs tenant create NAME --json` from the compiled CLI (as `npm run cli` runs it): the management client. */
async function createTenant(service: Service, name: string): Promise<{ clientId: string; clientSecret: string }> {
  const child = spawnNode('src/cli.ts', ['tenant', 'create', name, '--json'], service.env);
  const exit = await child.waitForExit(120_000);
  if (exit.code !== 0) throw new Error(`tenant create exited ${exit.code}: ${child.stderr()}`);
  return JSON.parse(child.stdout().trim().split('\n').pop()!) as { clientId: string; clientSecret: string };
}
