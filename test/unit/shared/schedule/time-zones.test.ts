// Time-zone names (src/shared/schedule/time-zones.ts, docs/api-reference.md 9): IANA names in their canonical spelling,
// and everything else refused.
import { describe, expect, it } from 'vitest';
import { isTimeZone, normalizeTimeZone } from '../../../../src/shared/schedule/time-zones.js';

describe('time-zone names', () => {
  it('knows IANA names, UTC included, and answers their canonical spelling', () => {
    for (const name of ['UTC', 'Etc/UTC', 'Europe/Berlin', 'America/Argentina/Buenos_Aires', 'America/Port-au-Prince', 'Etc/GMT+5', 'Australia/Lord_Howe']) {
      expect(isTimeZone(name), name).toBe(true);
    }
    expect(normalizeTimeZone('utc')).toBe('UTC');
    expect(normalizeTimeZone('europe/berlin')).toBe('Europe/Berlin');
  });

  it('refuses unknown names, offsets, ISO strings Temporal would read as a zone, and non-strings', () => {
    for (const name of ['', 'Mars/Olympus_Mons', 'Europe/Berlin ', '+02:00', '-05:00', '2026-01-01T00:00Z', '2026-01-01T00:00[Europe/Berlin]', 'Z', 'x'.repeat(65), 42, null, undefined]) {
      expect(isTimeZone(name), String(name)).toBe(false);
    }
  });
});
