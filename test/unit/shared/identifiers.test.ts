// Server-made ids are UUIDs; anything else in a path names nothing.
import { describe, expect, it } from 'vitest';
import { isUuid } from '../../../src/shared/identifiers.js';

describe('isUuid', () => {
  it('accepts the canonical form in either case and nothing else', () => {
    expect(isUuid('75df36ab-c701-4ac6-9e82-8e95d7efe237')).toBe(true);
    expect(isUuid('75DF36AB-C701-4AC6-9E82-8E95D7EFE237')).toBe(true);
    for (const value of ['', '75df36abc7014ac69e828e95d7efe237', '{75df36ab-c701-4ac6-9e82-8e95d7efe237}', '75df36ab-c701-4ac6-9e82-8e95d7efe23', "x' OR 1=1"]) {
      expect(isUuid(value), value).toBe(false);
    }
  });
});
