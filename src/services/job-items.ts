// How a bulk job applies one item of each type (docs/api-reference.md 14): through the single-item service, so the
// item is validated, refused, audited and announced as its endpoint would do it, after a look-up of its natural key
// that makes a re-run of the same file `unchanged`.
import { randomUUID } from 'node:crypto';
import type { Database } from '../db/database.js';
import { findEquivalentPermissions, type PermissionKey } from '../db/repositories/access-permission.repo.js';
import {
  findGroupsNamed,
  groupNamesTaken,
  insertGroupsWithMembers,
  LOCK_GROUPS,
  missingMembers,
  RESIDENTS,
  type GroupKind,
} from '../db/repositories/group.repo.js';
import { findMobileDevice, findMobileDevices, insertMobileDevices } from '../db/repositories/mobile-device.repo.js';
import { findSecuredObject } from '../db/repositories/secured-object.repo.js';
import { findEquivalentTicket } from '../db/repositories/ticket.repo.js';
import { ConflictError, ProblemError, UnprocessableError } from '../errors.js';
import type { ItemOutcome, JobType } from '../shared/bulk-jobs.js';
import { isUuid } from '../shared/identifiers.js';
import { checkTimeZone } from '../shared/schedule/preview.js';
import type { AccessPermissionService, NewAccessPermission } from './access-permission.service.js';
import { auditEvent, recordChanges } from './audit.service.js';
import type { ActionContext, Clock } from './context.js';
import type { GroupService } from './group.service.js';
import type { MobileDeviceService } from './mobile-device.service.js';
import type { NewSecuredObject, SecuredObjectService } from './secured-object.service.js';
import type { NewTicket, TicketService } from './ticket.service.js';

/** The single-item services an item is applied with, made over the item's own transaction (WritersOn). */
export interface ItemWriters {
  securedObjects: Pick<SecuredObjectService, 'register'>;
  mobileDevices: Pick<MobileDeviceService, 'register'>;
  residents: Pick<GroupService, 'create' | 'addMember'>;
  lockGroups: Pick<GroupService, 'create' | 'addMember'>;
  accessPermissions: Pick<AccessPermissionService, 'create' | 'createMany'>;
  tickets: Pick<TicketService, 'create'>;
}

/** Makes the single-item services over `db` (a transaction: withinTransaction). */
export type WritersOn = (db: Database) => ItemWriters;

export interface Applied {
  outcome: Exclude<ItemOutcome, 'failed'>;
  resourceId: string | null;
}

/** What applying an item needs: the services and the database of its transaction, and who sent the job. */
export interface ItemScope {
  db: Database;
  writers: ItemWriters;
  context: ActionContext;
}

const sameSet = (a: readonly string[], b: readonly string[]) => {
  const left = new Set(a);
  const right = new Set(b);
  return left.size === right.size && [...left].every((value) => right.has(value));
};

async function securedObject({ db, writers, context }: ItemScope, input: NewSecuredObject): Promise<Applied> {
  if (input.id !== undefined) {
    const existing = await findSecuredObject(db, context.tenantId, input.id);
    const zone = checkTimeZone('timeZone', input.timeZone ?? 'UTC').zone;
    if (
      existing &&
      sameSet(existing.channels, input.channels) &&
      existing.localName === input.localName &&
      existing.uuid === input.uuid.toLowerCase() &&
      existing.timeZone === zone
    ) {
      return { outcome: 'unchanged', resourceId: existing.id };
    }
    // Another lock under the id: the endpoint's own 409 (register refuses it).
  }
  const created = await writers.securedObjects.register(context, input);
  return { outcome: 'created', resourceId: created.id };
}

async function mobileDevice({ db, writers, context }: ItemScope, input: { id?: string; name?: string }): Promise<Applied> {
  if (input.id !== undefined) {
    const existing = await findMobileDevice(db, context.tenantId, input.id);
    if (existing && existing.name === (input.name ?? null)) return { outcome: 'unchanged', resourceId: existing.id };
  }
  const created = await writers.mobileDevices.register(context, input);
  return { outcome: 'created', resourceId: created.id };
}

/**
 * A group found by its name: made when there is none; when there is one, the members the item names that it lacks
 * are added (`updated`), one by one as `PUT …/{memberId}` adds them, with their tickets; members it does not name are
 * kept. Several groups of that name: `409`, the name does not say which.
 */
async function group(
  { db, context }: ItemScope,
  kind: GroupKind,
  service: ItemWriters['residents'],
  input: { name: string; memberIds: string[] },
): Promise<Applied> {
  const noun = kind === RESIDENTS ? 'resident' : 'lock group';
  const field = kind === RESIDENTS ? 'mobileDeviceIds' : 'securedObjectIds';
  const named = await findGroupsNamed(db, kind, context.tenantId, input.name, 2);
  if (named.length > 1) throw new ConflictError(`Several ${noun}s are named ${JSON.stringify(input.name)}: the name does not say which one.`);
  const existing = named[0];
  if (!existing) {
    const created = await service.create(context, input.name, input.memberIds);
    return { outcome: 'created', resourceId: created.id };
  }
  const lacking = [...new Set(input.memberIds)].filter((id) => !existing.memberIds.includes(id));
  if (lacking.length === 0) return { outcome: 'unchanged', resourceId: existing.id };
  // Refused as a create naming them would be, before anything is added.
  const missing = await missingMembers(db, kind, context.tenantId, lacking);
  if (missing.length > 0) {
    const memberNoun = kind === RESIDENTS ? 'mobile device' : 'secured object';
    throw new UnprocessableError(`Unknown ${memberNoun}s in this tenant: ${missing.join(', ')}.`, [
      { field, message: `no ${memberNoun} ${missing.join(', ')}` },
    ]);
  }
  for (const memberId of lacking) await service.addMember(context, existing.id, memberId);
  return { outcome: 'updated', resourceId: existing.id };
}

/** The natural key of a permission item (findEquivalentPermissions), or null when its ids cannot name one. */
const permissionKey = (input: NewAccessPermission): PermissionKey | null =>
  isUuid(input.residentId) && isUuid(input.lockGroupId)
    ? { ...input, schedule: input.schedule === undefined ? null : (input.schedule as never) }
    : null;

async function accessPermission({ db, writers, context }: ItemScope, input: NewAccessPermission): Promise<Applied> {
  const key = permissionKey(input);
  if (key) {
    const [existing] = await findEquivalentPermissions(db, context.tenantId, [key]);
    if (existing) return { outcome: 'unchanged', resourceId: existing };
  }
  const created = await writers.accessPermissions.create(context, input);
  return { outcome: 'created', resourceId: created.id };
}

async function ticket({ db, writers, context }: ItemScope, input: NewTicket): Promise<Applied> {
  const existing = await findEquivalentTicket(db, context.tenantId, input);
  if (existing) return { outcome: 'unchanged', resourceId: existing };
  const created = await writers.tickets.create(context, input);
  return { outcome: 'created', resourceId: created.id };
}

/**
 * Applies one item, already valid against its endpoint's body schema (checked when the job was sent). Throws the
 * endpoint's ProblemError when the item is refused.
 */
export function applyItem(scope: ItemScope, type: JobType, item: Record<string, unknown>): Promise<Applied> {
  switch (type) {
    case 'secured-objects':
      return securedObject(scope, item as unknown as NewSecuredObject);
    case 'mobile-devices':
      return mobileDevice(scope, item as { id?: string; name?: string });
    case 'residents':
      return group(scope, RESIDENTS, scope.writers.residents, {
        name: item.name as string,
        memberIds: (item.mobileDeviceIds as string[] | undefined) ?? [],
      });
    case 'lock-groups':
      return group(scope, LOCK_GROUPS, scope.writers.lockGroups, {
        name: item.name as string,
        memberIds: (item.securedObjectIds as string[] | undefined) ?? [],
      });
    case 'access-permissions':
      return accessPermission(scope, item as unknown as NewAccessPermission);
    case 'tickets':
      return ticket(scope, item as unknown as NewTicket);
  }
}

/** An item's outcome in a set-based batch: what was applied, or the endpoint's refusal. */
export type BatchOutcome = { index: number; applied: Applied } | { index: number; refused: ProblemError };

/**
 * Devices set-based (docs/api-reference.md 14): one read of the ids the batch names, one INSERT of the new ones, one
 * append of their `mobile_device.created` events, with the outcomes one by one register would give: `unchanged` for an
 * equal device already there, the endpoint's `409` for an id in use with another name, `created` for the rest.
 */
export async function applyMobileDevices(
  db: Database,
  context: ActionContext,
  clock: Clock,
  items: readonly { index: number; item: Record<string, unknown> }[],
): Promise<BatchOutcome[]> {
  const wanted = items.map(({ index, item }) => ({ index, id: (item.id as string | undefined) ?? randomUUID(), name: (item.name as string | undefined) ?? null }));
  const known = new Map((await findMobileDevices(db, context.tenantId, wanted.map((device) => device.id))).map((device) => [device.id, device.name]));
  const fresh = new Map<string, string | null>();
  for (const device of wanted) if (!known.has(device.id) && !fresh.has(device.id)) fresh.set(device.id, device.name);
  const createdAt = clock();
  const inserted = new Set(await insertMobileDevices(db, context.tenantId, [...fresh].map(([id, name]) => ({ id, name })), createdAt));
  const claimed = new Set<string>();
  const inUse = (id: string) => new ConflictError(`The mobile device id ${id} is in use.`);
  const outcomes = wanted.map((device): BatchOutcome => {
    // The first item of an id made it; a later one of the batch then finds it, as it would one request later.
    if (inserted.has(device.id) && !claimed.has(device.id)) {
      claimed.add(device.id);
      return { index: device.index, applied: { outcome: 'created', resourceId: device.id } };
    }
    const existing = known.has(device.id) ? known.get(device.id)! : inserted.has(device.id) ? fresh.get(device.id)! : undefined;
    if (existing !== undefined && existing === device.name) return { index: device.index, applied: { outcome: 'unchanged', resourceId: device.id } };
    return { index: device.index, refused: inUse(device.id) };
  });
  await recordChanges(
    db,
    [...claimed].map((id) => auditEvent(context, createdAt, 'mobile_device.created', `mobile_device:${id}`, { mobileDeviceId: id })),
  );
  return outcomes;
}

/** The words of a group's create (group.service.ts), for the same refusal and the same event. */
const GROUP_WORDS = {
  residents: { kind: RESIDENTS, field: 'mobileDeviceIds', memberNoun: 'mobile device', event: 'resident.created', target: 'resident', idKey: 'residentId' },
  'lock-groups': { kind: LOCK_GROUPS, field: 'securedObjectIds', memberNoun: 'secured object', event: 'lock_group.created', target: 'lock_group', idKey: 'lockGroupId' },
} as const;

/**
 * Residents or lock groups set-based (docs/api-reference.md 14): the items that create a group whose name is new (the
 * first of each name in the batch) are checked for unknown members with one read, then made with one INSERT of the
 * groups, one of their members and one append of their events, as create makes each. An item naming an unknown
 * member gets create's own `422`. The other items (a name already there, a name again) are answered `deferred`:
 * they run one by one afterwards, through the service, and find the groups made here.
 */
export async function applyGroups(
  db: Database,
  context: ActionContext,
  clock: Clock,
  type: 'residents' | 'lock-groups',
  items: readonly { index: number; item: Record<string, unknown> }[],
): Promise<{ outcomes: BatchOutcome[]; deferred: number[] }> {
  const words = GROUP_WORDS[type];
  const wanted = items.map(({ index, item }) => ({
    index,
    name: item.name as string,
    memberIds: [...new Set((item[words.field] as string[] | undefined) ?? [])],
  }));
  const taken = await groupNamesTaken(db, words.kind, context.tenantId, [...new Set(wanted.map((group) => group.name))]);
  const seen = new Set<string>();
  const creates: typeof wanted = [];
  const deferred: number[] = [];
  for (const group of wanted) {
    if (taken.has(group.name) || seen.has(group.name)) deferred.push(group.index);
    else creates.push(group);
    seen.add(group.name);
  }
  const missing = new Set(await missingMembers(db, words.kind, context.tenantId, [...new Set(creates.flatMap((group) => group.memberIds))]));
  const outcomes: BatchOutcome[] = [];
  const made: { id: string; name: string; memberIds: string[] }[] = [];
  for (const group of creates) {
    const unknown = group.memberIds.filter((id) => missing.has(id));
    if (unknown.length > 0) {
      outcomes.push({
        index: group.index,
        refused: new UnprocessableError(`Unknown ${words.memberNoun}s in this tenant: ${unknown.join(', ')}.`, [
          { field: words.field, message: `no ${words.memberNoun} ${unknown.join(', ')}` },
        ]),
      });
      continue;
    }
    const id = randomUUID();
    made.push({ id, name: group.name, memberIds: group.memberIds });
    outcomes.push({ index: group.index, applied: { outcome: 'created', resourceId: id } });
  }
  const createdAt = clock();
  await insertGroupsWithMembers(db, words.kind, context.tenantId, made, createdAt);
  await recordChanges(
    db,
    made.map((group) =>
      auditEvent(context, createdAt, words.event, `${words.target}:${group.id}`, { [words.idKey]: group.id, [words.field]: group.memberIds }),
    ),
  );
  return { outcomes, deferred };
}

/**
 * Access permissions set-based (docs/api-reference.md 14): one look-up of the batch's natural keys (an equal permission
 * already there is `unchanged`), then the rest granted together by the service's createMany, which checks, inserts and
 * expands them into tickets as create does each, with create's own refusal for each one refused. An item whose
 * resident and lock group an earlier item of the batch names too is answered `deferred`: it runs one by one
 * afterwards, through the service, and finds what the batch made.
 */
export async function applyAccessPermissions(
  { db, writers, context }: ItemScope,
  items: readonly { index: number; item: Record<string, unknown> }[],
): Promise<{ outcomes: BatchOutcome[]; deferred: number[] }> {
  const wanted = items.map(({ index, item }) => ({ index, input: item as unknown as NewAccessPermission, key: permissionKey(item as unknown as NewAccessPermission) }));
  const keyed = wanted.filter((entry) => entry.key !== null);
  const found = new Map((await findEquivalentPermissions(db, context.tenantId, keyed.map((entry) => entry.key!))).map((id, at) => [keyed[at]!.index, id]));
  const outcomes: BatchOutcome[] = [];
  const deferred: number[] = [];
  const creates: typeof wanted = [];
  const pairs = new Set<string>();
  for (const entry of wanted) {
    const existing = found.get(entry.index);
    if (existing) {
      outcomes.push({ index: entry.index, applied: { outcome: 'unchanged', resourceId: existing } });
      continue;
    }
    const pair = JSON.stringify([entry.input.residentId, entry.input.lockGroupId].map((id) => String(id).toLowerCase()));
    if (pairs.has(pair)) deferred.push(entry.index);
    else creates.push(entry);
    pairs.add(pair);
  }
  const made = await writers.accessPermissions.createMany(context, creates.map((entry) => entry.input));
  made.forEach((result, at) => {
    const { index } = creates[at]!;
    outcomes.push(result instanceof ProblemError ? { index, refused: result } : { index, applied: { outcome: 'created', resourceId: result.id } });
  });
  return { outcomes, deferred };
}
