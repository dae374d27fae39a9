// The registry of removed interfaces (docs/api-reference.md 4.4): dates as docs/service-overview.md 9 writes them, RFC 8594 Sunset, RFC 9745 Deprecation.
import { describe, expect, it } from 'vitest';
import { DEPRECATIONS, deprecationHeaders, httpDate, removalNotice, overviewDate } from '../../../src/shared/deprecations.js';

describe('deprecations', () => {
  it('writes dates the way the service overview does and Sunset as an HTTP-date', () => {
    expect(overviewDate('2019-03-01')).toBe('01.03.2019');
    expect(httpDate('2019-01-01')).toBe('Tue, 01 Jan 2019 00:00:00 GMT');
  });

  it('names the interface, its removal date and its successor in one sentence', () => {
    expect(removalNotice(DEPRECATIONS.tokenCardV1)).toBe(
      'Token card v1 was removed on 01.03.2019. Use token card v2 (GET /v1/residents/{id}/token-card?version=2) instead.',
    );
  });

  it('answers Sunset and the successor link when removed, and Deprecation (seconds since the epoch) while revived', () => {
    expect(deprecationHeaders(DEPRECATIONS.ticketsByObject, false)).toEqual({
      sunset: 'Mon, 01 Jan 2018 00:00:00 GMT',
      link: '</operatorapi/tickets>; rel="successor-version"',
    });
    expect(deprecationHeaders(DEPRECATIONS.ticketsByObject, true).deprecation).toBe('@1514764800');
  });

  it('has no link header for a successor that is not an HTTP resource, unless one is given', () => {
    expect(deprecationHeaders(DEPRECATIONS.mobileSdk2, false)).toEqual({ sunset: 'Sun, 01 Apr 2018 00:00:00 GMT' });
    expect(deprecationHeaders(DEPRECATIONS.tokenCardV1, false, '/v1/residents/r1/token-card?version=2').link).toBe(
      '</v1/residents/r1/token-card?version=2>; rel="successor-version"',
    );
  });

  it('keys every entry uniquely: the key is also the configuration name that revives it', () => {
    const keys = Object.values(DEPRECATIONS).map((deprecation) => deprecation.key);
    expect(new Set(keys).size).toBe(keys.length);
  });
});
