// The invariants, checked after every step of the model: each answers the violations it finds (never throws), and the
// runner prints each with the seed and the step.
import type pg from 'pg';
import type { ModelReceiver } from './receiver.js';
import { mustBeInLockdown, mustRefuse, type ModelLock, type World } from './world.js';
import type { Service } from './service.js';
import { request } from './service.js';

export type InvariantName = 'revocation-known' | 'lockdown-learnt' | 'service-not-ahead' | 'events-delivered' | 'nothing-lost';

export interface Violation {
  invariant: InvariantName;
  detail: string;
}

/** What a lock decided at a visit, with what the model knows of the credential. */
export interface Opened {
  lock: ModelLock;
  ticketId: string;
  jkt: string | undefined;
  override: boolean;
}

/**
 * 1. No lock opens for a credential whose revocation (or whose key's revocation) was committed before the lock's last
 * completed sync or the download of the newest phone that visited it. 2. No lock opens for a non-override credential
 * in a lockdown it must have learnt by then.
 */
export function checkOpened(world: World, opened: Opened): Violation[] {
  const violations: Violation[] = [];
  const refuse = mustRefuse(world, opened.lock, opened.ticketId, opened.jkt);
  if (refuse) violations.push({ invariant: 'revocation-known', detail: `lock ${opened.lock.id} opened for ${refuse}` });
  const lockdown = mustBeInLockdown(world, opened.lock);
  if (lockdown && !opened.override) {
    violations.push({
      invariant: 'lockdown-learnt',
      detail: `lock ${opened.lock.id} opened for non-override ticket ${opened.ticketId} in lockdown serial ${lockdown.serial} committed at ${lockdown.committedAt} (horizon ${Math.max(opened.lock.lastSyncStart, opened.lock.lastVisitDownload)})`,
    });
  }
  return violations;
}

interface SecuredObjectView {
  appliedThrough?: number;
  pendingRevocations?: number;
  lockMode?: 'lockdown' | 'normal';
  lockdownApplied?: boolean;
}

/**
 * 3. What the service shows about each lock is never ahead of the lock: its applied serial, the revocations it shows as
 * applied (every revoked, downloaded ticket the lock has not applied is among the doors that may still open), and a
 * lockdown shown as reached.
 */
export async function checkServiceView(world: World, service: Service): Promise<Violation[]> {
  const violations: Violation[] = [];
  const pick = (live: { name: string }[]) => live[0]!;
  for (const lock of world.locks) {
    const shown = await request(service, pick as never, 'GET', `/operatorapi/securedobjects/${lock.id}`, world.operator);
    if (shown.status !== 200) {
      violations.push({ invariant: 'service-not-ahead', detail: `GET securedobjects/${lock.id} answered ${shown.status} ${JSON.stringify(shown.body)}` });
      continue;
    }
    const view = shown.body as SecuredObjectView;
    if (view.appliedThrough !== undefined && view.appliedThrough > lock.sim.serial) {
      violations.push({ invariant: 'service-not-ahead', detail: `lock ${lock.id}: appliedThrough ${view.appliedThrough} but the lock applied serial ${lock.sim.serial}` });
    }
    if (view.lockdownApplied === true && view.lockMode !== undefined && (view.lockMode === 'lockdown') !== lock.sim.lockdown) {
      violations.push({
        invariant: 'service-not-ahead',
        detail: `lock ${lock.id}: shown as having applied mode ${view.lockMode}, the lock is in ${lock.sim.lockdown ? 'lockdown' : 'normal'} (state serial ${lock.sim.lockStateSerial})`,
      });
    }
    const unapplied = [...world.tickets.values()].filter((ticket) => ticket.lockId === lock.id && ticket.revokedAt !== undefined && ticket.downloaded && !lock.sim.isRevoked(ticket.id));
    if (unapplied.length === 0) continue;
    const open = await request(service, pick as never, 'GET', `/operatorapi/revocations?applied=false&securedObjectId=${lock.id}&limit=500`, world.operator);
    if (open.status !== 200 || !Array.isArray(open.body)) {
      violations.push({ invariant: 'service-not-ahead', detail: `GET revocations answered ${open.status} ${JSON.stringify(open.body).slice(0, 300)}` });
      continue;
    }
    const listed = new Set((open.body as { id: string }[]).map((ticket) => ticket.id));
    for (const ticket of unapplied) {
      if (!listed.has(ticket.id)) {
        violations.push({ invariant: 'service-not-ahead', detail: `lock ${lock.id}: revoked ticket ${ticket.id} shown as applied (not among the doors that may still open), the lock has not applied it` });
      }
    }
    if (view.pendingRevocations !== undefined && view.pendingRevocations < unapplied.length) {
      violations.push({ invariant: 'service-not-ahead', detail: `lock ${lock.id}: pendingRevocations ${view.pendingRevocations}, the lock lacks ${unapplied.length}` });
    }
  }
  return violations;
}

/** The tenant's committed events: their sequences and ids, in order. */
async function committedEvents(db: pg.Client, tenantId: string): Promise<{ seq: number; eventId: string }[]> {
  const { rows } = await db.query<{ seq: string; event_id: string }>(`SELECT seq, event_id FROM audit_events WHERE tenant_id = $1 ORDER BY seq`, [tenantId]);
  return rows.map((row) => ({ seq: Number(row.seq), eventId: row.event_id }));
}

/**
 * 4. Events reach the receiver at least once, in the tenant's sequence with no gap: each first arrival is the one after
 * the newest before it (from the first the webhook was subscribed for). With `drained`, every committed event arrived.
 */
export async function checkDeliveries(world: World, service: Service, receiver: ModelReceiver, firstSeq: number, drained: boolean): Promise<Violation[]> {
  const violations: Violation[] = [];
  const seen = new Set<number>();
  let newest = firstSeq - 1;
  for (const delivery of receiver.deliveries) {
    if (seen.has(delivery.sequence)) continue;
    if (delivery.sequence !== newest + 1) {
      violations.push({ invariant: 'events-delivered', detail: `delivery of sequence ${delivery.sequence} (${delivery.type}) came after ${newest}: ${delivery.sequence > newest ? 'a gap' : 'out of order'}` });
    }
    seen.add(delivery.sequence);
    newest = Math.max(newest, delivery.sequence);
  }
  if (drained) {
    const events = (await committedEvents(service.db, world.tenantId)).filter((event) => event.seq >= firstSeq);
    const missing = events.filter((event) => !seen.has(event.seq));
    if (missing.length > 0) {
      violations.push({ invariant: 'events-delivered', detail: `${missing.length} committed events never delivered: sequences ${missing.slice(0, 10).map((event) => event.seq).join(', ')}` });
    }
  }
  return violations;
}

/**
 * 5. Nothing committed is lost: every ticket the service answered 201 for is there, revoked when its revocation was
 * answered; the tenant's events never shrink, keep their sequence without a gap, and include every delivered one.
 */
export async function checkNothingLost(world: World, service: Service, receiver: ModelReceiver): Promise<Violation[]> {
  const violations: Violation[] = [];
  const ids = [...world.tickets.keys()];
  if (ids.length > 0) {
    const { rows } = await service.db.query<{ id: string; revoked: boolean }>(
      `SELECT id::text AS id, revoked_at IS NOT NULL AS revoked FROM tickets WHERE tenant_id = $1 AND id = ANY($2::uuid[])`,
      [world.tenantId, ids],
    );
    const stored = new Map(rows.map((row) => [row.id, row.revoked]));
    for (const ticket of world.tickets.values()) {
      if (!stored.has(ticket.id)) violations.push({ invariant: 'nothing-lost', detail: `ticket ${ticket.id} (answered 201) is gone` });
      else if (ticket.revokedAt !== undefined && !stored.get(ticket.id)) violations.push({ invariant: 'nothing-lost', detail: `ticket ${ticket.id}'s revocation (answered) is gone` });
    }
  }
  const events = await committedEvents(service.db, world.tenantId);
  const maxSeq = events.length === 0 ? 0 : events[events.length - 1]!.seq;
  if (events.length < world.eventHighWater.count || maxSeq < world.eventHighWater.maxSeq) {
    violations.push({ invariant: 'nothing-lost', detail: `events went from ${world.eventHighWater.count} (newest ${world.eventHighWater.maxSeq}) to ${events.length} (newest ${maxSeq})` });
  }
  if (events.length > 0 && maxSeq - events[0]!.seq + 1 !== events.length) {
    violations.push({ invariant: 'nothing-lost', detail: `the event sequence has a hole: ${events.length} events from ${events[0]!.seq} to ${maxSeq}` });
  }
  const stored = new Set(events.map((event) => event.eventId));
  const lost = receiver.deliveries.filter((delivery) => !stored.has(delivery.id));
  if (lost.length > 0) violations.push({ invariant: 'nothing-lost', detail: `${lost.length} delivered events are no longer stored: ${lost.slice(0, 5).map((delivery) => delivery.sequence).join(', ')}` });
  world.eventHighWater = { count: Math.max(world.eventHighWater.count, events.length), maxSeq: Math.max(world.eventHighWater.maxSeq, maxSeq) };
  return violations;
}
