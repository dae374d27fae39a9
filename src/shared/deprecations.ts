// The one registry of removed interfaces (docs/service-overview.md section 9, docs/api-reference.md 4.4): removal date, successor, and how to answer.

export interface Deprecation {
  /** Stable key, also the configuration name that keeps the interface alive. */
  key: string;
  interface: string;
  /** Removal date (docs/service-overview.md section 9, DD.MM.YYYY), as an ISO date. */
  removedOn: string;
  successor: string;
  /** A link to the successor, for `Link: <…>; rel="successor-version"`, when it is an HTTP resource. */
  successorLink?: string;
}

export const DEPRECATIONS = {
  lockSync: {
    key: 'lockserver-binary',
    interface: 'Online secured object synchronisation (GET /tickets/lockserver/binary)',
    removedOn: '2018-01-01',
    successor: 'GET /deviceapi/securedobjects/{id}/sync',
    // A Link target must be a URI, not a template: the Device API's documentation describes the sync endpoint.
    successorLink: '/deviceapi/apidocs/index.html',
  },
  ticketsByObject: {
    key: 'tickets-by-object',
    interface: 'Token retrieval via mobile device or secured object (GET /mobiledevices/{id}/tickets, GET /securedobjects/{id}/tickets)',
    removedOn: '2018-01-01',
    successor: 'GET /operatorapi/tickets with the mobileDeviceId or securedObjectId filter',
    successorLink: '/operatorapi/tickets',
  },
  nfcCardChannel: {
    key: 'nfccard-channel',
    interface: 'Channel nfccard',
    removedOn: '2018-02-01',
    successor: 'channel btlespp',
  },
  mobileSdk2: {
    key: 'mobile-sdk-2',
    interface: 'Mobile SDK 2.x',
    removedOn: '2018-04-01',
    successor: 'Mobile SDK 3.0 or later',
  },
  basicAuth: {
    key: 'basic-auth',
    interface: 'HTTP Basic authentication for backend services',
    removedOn: '2019-01-01',
    successor: 'OAuth 2.0 client credentials: POST /oauth/token, then Authorization: Bearer',
    successorLink: '/oauth/token',
  },
  tokenCardV1: {
    key: 'token-card-v1',
    interface: 'Token card v1',
    removedOn: '2019-03-01',
    successor: 'token card v2 (GET /v1/residents/{id}/token-card?version=2)',
  },
} as const satisfies Record<string, Deprecation>;

/** The removed interfaces an operator may keep alive with `DEPRECATED_INTERFACES_ENABLED`; the others are gone for good. */
export const REVIVABLE_INTERFACES: readonly string[] = [DEPRECATIONS.ticketsByObject.key, DEPRECATIONS.nfcCardChannel.key];

/** `2019-01-01` → `01.01.2019`, the form the original description uses (docs/service-overview.md). */
export function overviewDate(isoDate: string): string {
  const [year, month, day] = isoDate.split('-');
  return `${day}.${month}.${year}`;
}

/** RFC 8594 `Sunset` is an HTTP-date. */
export function httpDate(isoDate: string): string {
  return new Date(`${isoDate}T00:00:00Z`).toUTCString();
}

/** The sentence every answer about a removed interface starts with. */
export function removalNotice(deprecation: Deprecation): string {
  return `${deprecation.interface} was removed on ${overviewDate(deprecation.removedOn)}. Use ${deprecation.successor} instead.`;
}

/**
 * Headers for a removed interface: `Sunset` (RFC 8594) and the successor link, plus `Deprecation` (RFC 9745) while
 * an operator keeps it alive.
 */
export function deprecationHeaders(deprecation: Deprecation, alive: boolean, successorLink?: string): Record<string, string> {
  const headers: Record<string, string> = { sunset: httpDate(deprecation.removedOn) };
  const link = successorLink ?? deprecation.successorLink;
  if (link) headers.link = `<${link}>; rel="successor-version"`;
  if (alive) headers.deprecation = `@${Math.floor(Date.parse(`${deprecation.removedOn}T00:00:00Z`) / 1000)}`;
  return headers;
}
