// The binding rule of the Device API (docs/api-reference.md 3.7, 4.1, 6): a bound client reaches only its own device or
// lock, another of the same kind answers as missing, and the client of a deleted lock only syncs.
import { describe, expect, it } from 'vitest';
import { ForbiddenError, NotFoundError } from '../../../src/errors.js';
import { assertBinding, assertLockClientActive } from '../../../src/shared/device-binding.js';

const thrown = (run: () => void): unknown => {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected a refusal');
};

describe('assertBinding', () => {
  it('lets a client bound to this device or lock through, and an unbound one where no binding is required', () => {
    expect(() => assertBinding({ clientId: 'c', mobileDeviceId: 'phone-a' }, 'mobileDeviceId', 'phone-a', 'needs a phone')).not.toThrow();
    expect(() => assertBinding({ clientId: 'c', securedObjectId: 'lock-x' }, 'securedObjectId', 'lock-x', null)).not.toThrow();
    expect(() => assertBinding({ clientId: 'c' }, 'securedObjectId', 'lock-x', null)).not.toThrow();
  });

  it('answers another device or lock of the same kind as missing', () => {
    const device = thrown(() => assertBinding({ clientId: 'c', mobileDeviceId: 'phone-a' }, 'mobileDeviceId', 'phone-b', null));
    expect(device).toBeInstanceOf(NotFoundError);
    expect(device).toMatchObject({ status: 404, detail: 'No mobile device phone-b.' });
    expect(thrown(() => assertBinding({ clientId: 'c', securedObjectId: 'lock-x' }, 'securedObjectId', 'lock-y', null))).toMatchObject({
      status: 404,
      detail: 'No secured object lock-y.',
    });
  });

  it('refuses a client bound to the other kind, and an unbound one where a binding is required, with 403', () => {
    const other = thrown(() => assertBinding({ clientId: 'c', securedObjectId: 'lock-x' }, 'mobileDeviceId', 'phone-a', null));
    expect(other).toBeInstanceOf(ForbiddenError);
    expect(other).toMatchObject({ status: 403, detail: 'This client is bound to another kind of device.' });
    expect(thrown(() => assertBinding({ clientId: 'c' }, 'mobileDeviceId', 'phone-a', 'needs a phone'))).toMatchObject({ status: 403, detail: 'needs a phone' });
  });
});

describe('assertLockClientActive', () => {
  it('lets the client of a standing lock through', () => {
    expect(() => assertLockClientActive({ lockExists: true, decommissionedSeq: null }, 'lock-x')).not.toThrow();
  });

  it('refuses the client of a deleted lock with 403, even once its id names a new lock', () => {
    for (const lockExists of [false, true]) {
      const refusal = thrown(() => assertLockClientActive({ lockExists, decommissionedSeq: 12 }, 'lock-x'));
      expect(refusal).toBeInstanceOf(ForbiddenError);
      expect(refusal).toMatchObject({ status: 403, detail: expect.stringContaining('can only sync') });
    }
  });

  it('answers a lock that does not exist as missing', () => {
    expect(thrown(() => assertLockClientActive({ lockExists: false, decommissionedSeq: null }, 'lock-x'))).toMatchObject({
      status: 404,
      detail: 'No secured object lock-x.',
    });
  });
});
