// The binding rule of the Device API (docs/api-reference.md 3.7, 6): a client bound to a device or lock reaches only that one.
import { ForbiddenError, NotFoundError } from '../errors.js';

/** The device or lock the caller's OAuth client is bound to (docs/api-reference.md 3.7), as its access token says; both absent: unbound. */
export interface DeviceBinding {
  clientId: string;
  mobileDeviceId?: string;
  securedObjectId?: string;
}

/**
 * A client bound to a device or lock reaches only that device's or lock's data (docs/api-reference.md 3.7, 6); another id of the
 * same kind answers as missing, so a bound client learns nothing about its neighbours. The rule lives beside the
 * services of the data it guards rather than in a route or the bearer plugin: every caller of download, sync and the
 * access-log uploads gets it, a new route cannot forget it, and the bearer plugin stays about tokens and scopes.
 */
export function assertBinding(binding: DeviceBinding, kind: 'mobileDeviceId' | 'securedObjectId', id: string, bindingRequired: string | null): void {
  const bound = binding[kind];
  const other = binding[kind === 'mobileDeviceId' ? 'securedObjectId' : 'mobileDeviceId'];
  if (bound !== undefined && bound !== id) throw new NotFoundError(`No ${kind === 'mobileDeviceId' ? 'mobile device' : 'secured object'} ${id}.`);
  if (other !== undefined) throw new ForbiddenError('This client is bound to another kind of device.');
  if (bindingRequired !== null && bound === undefined) throw new ForbiddenError(bindingRequired);
}

/**
 * A lock's own client reaches the lock's data only while the lock stands (lock-sync.repo.ts findLockForClient): the
 * client of a deleted lock only syncs the revocations its deletion caused (docs/api-reference.md 4.1); a lock that
 * does not exist answers as missing.
 */
export function assertLockClientActive(lock: { lockExists: boolean; decommissionedSeq: number | null }, securedObjectId: string): void {
  if (lock.decommissionedSeq !== null) {
    throw new ForbiddenError('This lock was deleted: its client can only sync the revocations that deleting it caused.');
  }
  if (!lock.lockExists) throw new NotFoundError(`No secured object ${securedObjectId}.`);
}
