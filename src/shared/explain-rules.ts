// The words of the explain endpoint (docs/api-reference.md 8.6) that its service and its schema share: the reason codes
// (stable kebab-case, clients may branch on them) and how many tickets one answer judges.

/** At most this many tickets of one phone for one lock are judged, the newest first. */
export const MAX_EXPLAINED_TICKETS = 50;

export const ACCESS_CHECK_CODES = [
  'valid',
  'no-token',
  'not-downloaded',
  'key-not-published',
  'revoked',
  'revocation-not-applied',
  'expired',
  'credential-expired',
  'not-yet-valid',
  'outside-schedule',
  'command-not-granted',
  'channel-not-granted',
  'channel-not-supported',
  'clock-drift',
  'invalid-time',
  'lock-not-provisioned',
  'lock-decommissioned',
  'malformed-credential',
  'wrong-issuer',
  'wrong-lock',
  'lifetime-exceeds-maximum',
] as const;

export type AccessCheckCode = (typeof ACCESS_CHECK_CODES)[number];
