// The explain endpoint's rules (src/shared/explain-rules.ts, docs/api-reference.md 8.6): what is asked, the lock as the
// rules see it, every reason of the one rule mapped to the API's words, schedules (hand-made `win` claims here), the
// revocation not yet applied, the key check, the lock's clock and channels, and the summary over several tickets.
import { describe, expect, it } from 'vitest';
import {
  ACCESS_CHECK_CODES,
  DEFAULT_COMMAND,
  decodeCredential,
  describeCheck,
  explainRequest,
  explainTicket,
  lockReasons,
  lockView,
  summarize,
  type AccessCheckCode,
  type ExplainRequest,
  type LockFacts,
  type LockView,
  type TicketEvidence,
} from '../../../src/shared/explain-rules.js';
import type { CredentialCheckReason, CredentialClaims } from '../../../src/shared/credential-check.js';

const ISSUER = 'https://locks.test/tenants/acme';
const BEGIN = Date.UTC(2026, 8, 1, 8, 0, 0);
const END = BEGIN + 30 * 86_400_000;
const LIFETIME = 604_800;
const AT = BEGIN + 3_600_000;

const claims = (overrides: Partial<CredentialClaims> = {}): CredentialClaims => ({
  iss: ISSUER,
  jti: 'ticket-1',
  sub: 'phone',
  aud: 'door',
  nbf: BEGIN / 1000,
  exp: BEGIN / 1000 + LIFETIME,
  iat: BEGIN / 1000,
  beginDate: BEGIN,
  endDate: END,
  cmd: ['open'],
  chn: ['btlespp'],
  ...overrides,
});

const HEADER = { alg: 'EdDSA', kid: 'key-1', typ: 'ticket+jwt' };

const lock = (overrides: Partial<LockView> = {}): LockView => ({
  issuer: ISSUER,
  securedObjectId: 'door',
  maxCredentialLifetime: LIFETIME,
  channels: ['btlespp'],
  revoked: new Set(),
  publishedKids: new Set(['key-1']),
  keySetPending: false,
  unknownKids: new Set(),
  holderBinding: 'optional',
  holderBindingPending: false,
  revokedKeys: new Set(),
  pendingRevokedKeys: new Set(),
  clockOffsetMs: null,
  lockMode: 'normal',
  lockStateApplied: false,
  lockdownEndPending: false,
  ...overrides,
});

const request = (overrides: Partial<ExplainRequest> = {}): ExplainRequest => ({ command: 'open', channel: 'btlespp', at: AT, lockTime: AT, ...overrides });

const ticket = (overrides: Partial<TicketEvidence['ticket']> = {}): TicketEvidence['ticket'] => ({
  id: 'ticket-1',
  beginDate: BEGIN,
  endDate: END,
  revokedAt: null,
  revocationAppliedAt: null,
  ...overrides,
});

const held = (claimOverrides: Partial<CredentialClaims> = {}, ticketOverrides: Partial<TicketEvidence['ticket']> = {}, header: unknown = HEADER): TicketEvidence => ({
  ticket: ticket(ticketOverrides),
  held: { header, claims: claims(claimOverrides) },
  onceDownloaded: null,
});

const codes = (result: { reasons: { code: string }[] }) => result.reasons.map((reason) => reason.code);

describe('describeCheck', () => {
  // Typed over every refusal: a reason added to the rule fails to compile here until the test says what it becomes.
  const EXPECTED: Record<Exclude<CredentialCheckReason, 'ok'>, AccessCheckCode> = {
    malformed: 'malformed-credential',
    decommissioned: 'lock-decommissioned',
    'wrong-issuer': 'wrong-issuer',
    'wrong-lock': 'wrong-lock',
    'lifetime-exceeded': 'lifetime-exceeds-maximum',
    'not-yet-valid': 'not-yet-valid',
    expired: 'expired',
    'outside-schedule': 'outside-schedule',
    'command-not-granted': 'command-not-granted',
    'channel-not-granted': 'channel-not-granted',
    revoked: 'revoked',
  };

  it.each(Object.entries(EXPECTED) as [Exclude<CredentialCheckReason, 'ok'>, AccessCheckCode][])('maps %j to %s, with a message', (reason, code) => {
    const described = describeCheck({ decision: 'deny', reason }, claims(), ticket({ endDate: AT }), lock(), request());
    expect(described.code).toBe(code);
    expect(described.message.length).toBeGreaterThan(20);
    expect(ACCESS_CHECK_CODES).toContain(described.code);
  });

  it('tells from the lock\'s one word malformed whether its clock, its trust or the credential is at fault', () => {
    const malformed = { decision: 'deny', reason: 'malformed' } as const;
    expect(describeCheck(malformed, claims(), ticket(), lock(), request({ lockTime: Number.NaN })).code).toBe('invalid-time');
    expect(describeCheck(malformed, claims(), ticket(), lock({ issuer: '' }), request()).code).toBe('lock-not-provisioned');
    expect(describeCheck(malformed, claims(), ticket(), lock({ maxCredentialLifetime: 0 }), request()).code).toBe('lock-not-provisioned');
    expect(describeCheck(malformed, null, ticket(), lock(), request()).code).toBe('malformed-credential');
  });

  it('maps an opening to valid, naming until when', () => {
    expect(describeCheck({ decision: 'open', reason: 'ok' }, claims(), ticket(), lock(), request())).toEqual({
      code: 'valid',
      message: `The lock opens: the credential permits open over btlespp until ${new Date(BEGIN + LIFETIME * 1000).toISOString()}.`,
    });
  });

  it('tells a credential that ran out from a ticket that ended, by the lock\'s time against the ticket\'s end', () => {
    const expired = { decision: 'deny', reason: 'expired' } as const;
    expect(describeCheck(expired, claims(), ticket(), lock(), request({ lockTime: END - 1 })).code).toBe('credential-expired');
    expect(describeCheck(expired, claims(), ticket(), lock(), request({ lockTime: END })).code).toBe('expired');
    // A revoked ticket is never renewed: its credential simply expired.
    expect(describeCheck(expired, claims(), ticket({ revokedAt: BEGIN }), lock(), request({ lockTime: END - 1 })).code).toBe('expired');
  });

  it('names the issuer and the lock a foreign credential was made for', () => {
    expect(describeCheck({ decision: 'deny', reason: 'wrong-issuer' }, claims({ iss: 'http://old.test/tenants/acme' }), ticket(), lock(), request()).message).toContain(
      'http://old.test/tenants/acme',
    );
    expect(describeCheck({ decision: 'deny', reason: 'wrong-lock' }, claims({ aud: 'gate' }), ticket(), lock(), request()).message).toContain('gate');
  });
});

describe('explainTicket', () => {
  it('allows a held credential that the rule opens', () => {
    expect(explainTicket(held(), lock(), request(), AT)).toEqual({ decision: 'allow', reasons: [expect.objectContaining({ code: 'valid' })] });
  });

  describe('outside-schedule (docs/api-reference.md 9: the credential carries `win`)', () => {
    const win: [number, number][] = [
      [BEGIN + 5 * 3_600_000, BEGIN + 6 * 3_600_000],
      [BEGIN, BEGIN + 1_800_000],
      [BEGIN + 26 * 3_600_000, BEGIN + 27 * 3_600_000],
    ];

    it('answers the next window\'s start, ISO and ms, judged on the lock\'s clock', () => {
      const result = explainTicket(held({ win }), lock(), request(), AT);
      expect(result.decision).toBe('deny');
      const next = BEGIN + 5 * 3_600_000;
      expect(result.reasons).toEqual([
        {
          code: 'outside-schedule',
          message: `Outside the ticket's schedule: the next window opens at ${new Date(next).toISOString()} (${next} ms) on the lock's clock.`,
          nextWindowStart: next,
        },
      ]);
      // Inside a window it opens; at a window's end it is outside again, and the next one is named.
      expect(explainTicket(held({ win }), lock(), request({ lockTime: BEGIN + 5 * 3_600_000 }), AT).decision).toBe('allow');
      expect(explainTicket(held({ win }), lock(), request({ lockTime: BEGIN + 6 * 3_600_000 }), AT).reasons[0]).toMatchObject({ nextWindowStart: BEGIN + 26 * 3_600_000 });
    });

    it('says when the credential holds no later window', () => {
      const result = explainTicket(held({ win }), lock(), request({ lockTime: BEGIN + 27 * 3_600_000 }), AT);
      expect(result.reasons).toEqual([{ code: 'outside-schedule', message: expect.stringContaining('no later window') }]);
    });

    it('for a ticket not downloaded, says it of the credential a download would carry', () => {
      const evidence: TicketEvidence = { ticket: ticket(), held: null, onceDownloaded: claims({ win }) };
      const result = explainTicket(evidence, lock(), request(), AT);
      expect(codes(result)).toEqual(['not-downloaded', 'outside-schedule']);
      expect(result.reasons[1]).toMatchObject({ message: expect.stringMatching(/^Once downloaded: Outside/), nextWindowStart: BEGIN + 5 * 3_600_000 });
    });
  });

  it('refuses a credential whose key is no longer published, before the claims are read, as a lock verifying the signature does', () => {
    const result = explainTicket(held({ cmd: ['clos'] }), lock({ publishedKids: new Set(['key-2']) }), request(), AT);
    expect(result).toEqual({ decision: 'deny', reasons: [{ code: 'key-not-published', message: expect.stringContaining('key-1') }] });
    // A header of another type is refused as such by the rule, whatever its key.
    expect(codes(explainTicket(held({}, {}, { ...HEADER, typ: 'at+jwt', kid: 'key-9' }), lock(), request(), AT))).toEqual(['malformed-credential']);
    expect(codes(explainTicket(held({}, {}, null), lock(), request(), AT))).toEqual(['malformed-credential']);
  });

  it('refuses a credential under a published key announced after what the lock applied, before anything else, as the lock does', () => {
    const result = explainTicket(held({ cmd: ['clos'] }), lock({ unknownKids: new Set(['key-1']) }), request(), AT);
    expect(result).toEqual({ decision: 'deny', reasons: [{ code: 'key-not-known-yet', message: expect.stringContaining('key-1') }] });
    // Revoked on the server and not applied: the door stays shut anyway, and both are said.
    expect(codes(explainTicket(held({}, { revokedAt: BEGIN + 60_000 }), lock({ unknownKids: new Set(['key-1']) }), request(), AT))).toEqual([
      'key-not-known-yet',
      'revocation-not-applied',
    ]);
    // Another key unknown to the lock changes nothing for this credential.
    expect(explainTicket(held(), lock({ unknownKids: new Set(['key-2']) }), request(), AT).decision).toBe('allow');
  });

  it('binding: a lock requiring it refuses an unbound credential; a key the lock knows revoked refuses, one it does not yet may open', () => {
    const JKT = 'x'.repeat(43);
    expect(explainTicket(held(), lock({ holderBinding: 'required' }), request(), AT)).toEqual({
      decision: 'deny',
      reasons: [{ code: 'binding-required', message: expect.stringContaining('PUT /deviceapi/mobiledevices/{id}/key') }],
    });
    // Required since a change the lock has not applied: it still opens, and explain says so.
    expect(explainTicket(held(), lock({ holderBinding: 'required', holderBindingPending: true }), request(), AT)).toEqual({
      decision: 'allow',
      reasons: [{ code: 'binding-not-applied', message: expect.stringContaining('MAY STILL OPEN') }],
    });
    // A bound credential passes a lock that requires binding (the proof is the phone's to make with its key).
    expect(explainTicket(held({ cnf: { jkt: JKT } }), lock({ holderBinding: 'required' }), request(), AT).decision).toBe('allow');
    expect(explainTicket(held({ cnf: { jkt: JKT } }), lock({ revokedKeys: new Set([JKT]) }), request(), AT)).toEqual({
      decision: 'deny',
      reasons: [{ code: 'key-revoked', message: expect.stringContaining(JKT) }],
    });
    expect(explainTicket(held({ cnf: { jkt: JKT } }), lock({ pendingRevokedKeys: new Set([JKT]) }), request(), AT)).toEqual({
      decision: 'allow',
      reasons: [{ code: 'key-revocation-not-applied', message: expect.stringContaining('MAY STILL OPEN') }],
    });
    // Refused by the credential's own rules first: the binding is never reached, as at the lock.
    expect(codes(explainTicket(held({ cmd: ['clos'] }), lock({ holderBinding: 'required' }), request(), AT))).toEqual(['command-not-granted']);
  });

  it('a withdrawn key the lock has not learnt of yet: judged as the lock still holding it would, and said so', () => {
    const withdrawn = lock({ publishedKids: new Set(['key-2']), keySetPending: true });
    expect(explainTicket(held(), withdrawn, request(), AT)).toEqual({
      decision: 'allow',
      reasons: [{ code: 'key-not-published', message: expect.stringContaining('MAY STILL OPEN') }],
    });
    // Refused anyway for another reason: that reason first, the key's state beside it.
    expect(codes(explainTicket(held({ cmd: ['clos'] }), withdrawn, request(), AT))).toEqual(['command-not-granted', 'key-not-published']);
    // Revoked too and not applied: both are said.
    expect(codes(explainTicket(held({}, { revokedAt: BEGIN + 60_000 }), withdrawn, request(), AT))).toEqual(['key-not-published', 'revocation-not-applied']);
  });

  it('revoked: allow with revocation-not-applied while the lock has not applied it, revoked once it has', () => {
    const revokedAt = BEGIN + 60_000;
    const pending = explainTicket(held({}, { revokedAt }), lock(), request(), AT);
    expect(pending).toEqual({ decision: 'allow', reasons: [{ code: 'revocation-not-applied', message: expect.stringContaining('MAY STILL OPEN') }] });
    const applied = explainTicket(held({}, { revokedAt, revocationAppliedAt: revokedAt + 1 }), lock({ revoked: new Set(['ticket-1']) }), request(), AT);
    expect(applied).toEqual({ decision: 'deny', reasons: [expect.objectContaining({ code: 'revoked' })] });
    // Refused for another reason first: the revocation's state is said beside it.
    expect(codes(explainTicket(held({}, { revokedAt }), lock(), request({ command: 'clos' }), AT))).toEqual(['command-not-granted', 'revocation-not-applied']);
    expect(
      codes(explainTicket(held({}, { revokedAt, revocationAppliedAt: revokedAt }), lock({ revoked: new Set(['ticket-1']) }), request({ lockTime: END }), AT)),
    ).toEqual(['expired', 'revoked']);
  });

  it('lockdown: a credential that would open is refused with lockdown, applied or on its way; an override ticket opens with a note', () => {
    const applied = lock({ lockMode: 'lockdown', lockStateApplied: true });
    expect(explainTicket(held(), applied, request(), AT)).toEqual({
      decision: 'deny',
      reasons: [{ code: 'lockdown', message: expect.stringContaining('has applied it') }],
    });
    expect(explainTicket(held(), lock({ lockMode: 'lockdown' }), request(), AT)).toEqual({
      decision: 'deny',
      reasons: [{ code: 'lockdown', message: expect.stringContaining('may still open') }],
    });
    expect(explainTicket(held({ ovr: true }), applied, request(), AT)).toEqual({
      decision: 'allow',
      reasons: [expect.objectContaining({ code: 'valid' }), expect.objectContaining({ code: 'lockdown-override' })],
    });
    // A credential the lock refuses anyway says why, not lockdown; an override is no note outside a lockdown.
    expect(explainTicket(held(), applied, request({ command: 'lock' }), AT).reasons.map((r) => r.code)).toEqual(['command-not-granted']);
    expect(explainTicket(held({ ovr: true }), lock(), request(), AT).reasons.map((r) => r.code)).toEqual(['valid']);
    // Not downloaded yet: what the downloaded credential would meet.
    expect(explainTicket({ ticket: ticket(), held: null, onceDownloaded: claims() }, applied, request(), AT).reasons.map((r) => r.code)).toEqual([
      'not-downloaded',
      'lockdown',
    ]);
    expect(explainTicket({ ticket: ticket(), held: null, onceDownloaded: claims({ ovr: true }) }, applied, request(), AT).reasons.map((r) => r.code)).toEqual([
      'not-downloaded',
    ]);
  });

  it('a lockdown ended that the lock has not learnt: allow by the state the service holds, with what the lock still does', () => {
    const pending = lock({ lockdownEndPending: true });
    expect(explainTicket(held(), pending, request(), AT)).toEqual({
      decision: 'allow',
      reasons: [{ code: 'lockdown-end-not-applied', message: expect.stringContaining('refuses every credential but an override') }],
    });
    // An override ticket opens at such a lock either way; a credential refused anyway says only why.
    expect(explainTicket(held({ ovr: true }), pending, request(), AT).reasons.map((r) => r.code)).toEqual(['valid']);
    expect(explainTicket(held(), pending, request({ command: 'lock' }), AT).reasons.map((r) => r.code)).toEqual(['command-not-granted']);
  });

  it('not downloaded: when it will be, and never for a revoked or ended ticket', () => {
    const notHeld = (overrides: Partial<TicketEvidence> = {}): TicketEvidence => ({ ticket: ticket(), held: null, onceDownloaded: claims(), ...overrides });
    expect(explainTicket(notHeld(), lock(), request(), AT)).toEqual({
      decision: 'deny',
      reasons: [{ code: 'not-downloaded', message: expect.stringContaining('next download') }],
    });
    const from = BEGIN - LIFETIME * 1000 + 1000;
    expect(explainTicket(notHeld({ credentialAvailableFrom: from }), lock(), request(), AT).reasons[0]).toEqual({
      code: 'not-downloaded',
      message: expect.stringContaining(`${new Date(from).toISOString()} (${from} ms)`),
      credentialAvailableFrom: from,
    });
    expect(explainTicket(notHeld({ ticket: ticket({ revokedAt: BEGIN }), onceDownloaded: null }), lock(), request(), AT).reasons).toEqual([
      { code: 'not-downloaded', message: expect.stringContaining('revoked') },
    ]);
    expect(explainTicket(notHeld({ ticket: ticket({ endDate: AT }) }), lock(), request(), AT + 1).reasons[0]!.message).toContain('ended');
  });

  it('channel-not-supported: the phone cannot reach the lock that way, so no credential is judged', () => {
    const result = explainTicket(held({ chn: ['btlespp', 'nfccard'] }), lock(), request({ channel: 'nfccard' }), AT);
    expect(result).toEqual({ decision: 'deny', reasons: [{ code: 'channel-not-supported', message: expect.stringContaining('supports btlespp') }] });
  });

  it('clock-drift beyond 30 s, either way; the decision is the lock\'s at its own time', () => {
    expect(lockReasons(lock({ clockOffsetMs: 30_000 }), request())).toEqual([]);
    expect(lockReasons(lock({ clockOffsetMs: -30_000 }), request())).toEqual([]);
    expect(lockReasons(lock({ clockOffsetMs: 30_001 }), request())[0]).toMatchObject({ code: 'clock-drift', message: expect.stringContaining('30 s ahead of') });
    expect(lockReasons(lock({ clockOffsetMs: -90_000 }), request({ lockTime: AT - 90_000 }))[0]).toMatchObject({
      code: 'clock-drift',
      message: expect.stringContaining(`90 s behind the server's: it judges ${new Date(AT).toISOString()} as ${new Date(AT - 90_000).toISOString()}`),
    });
    const drifted = explainTicket(held(), lock({ clockOffsetMs: -90_000 }), request({ lockTime: BEGIN - 1 }), AT);
    expect(codes(drifted)).toEqual(['not-yet-valid', 'clock-drift']);
  });
});

describe('summarize', () => {
  const reason = (code: AccessCheckCode, message: string = code) => ({ code, message });

  it('no ticket: no-token, with what concerns the lock', () => {
    expect(summarize([], [reason('clock-drift')])).toEqual({ decision: 'deny', reasons: [expect.objectContaining({ code: 'no-token' }), reason('clock-drift')] });
  });

  it('allow when any ticket opens, with only the opening tickets\' reasons', () => {
    const result = summarize(
      [
        { decision: 'deny', reasons: [reason('expired')] },
        { decision: 'allow', reasons: [reason('revocation-not-applied')] },
        { decision: 'allow', reasons: [reason('valid')] },
      ],
      [],
    );
    expect(result).toEqual({ decision: 'allow', reasons: [reason('revocation-not-applied'), reason('valid')] });
  });

  it('deny with every ticket\'s reasons, each code once (the newest ticket\'s message)', () => {
    const result = summarize(
      [
        { decision: 'deny', reasons: [reason('expired', 'newest'), reason('clock-drift')] },
        { decision: 'deny', reasons: [reason('expired', 'older'), reason('revoked'), reason('clock-drift')] },
      ],
      [reason('clock-drift')],
    );
    expect(result).toEqual({ decision: 'deny', reasons: [reason('expired', 'newest'), reason('clock-drift'), reason('revoked')] });
  });
});

describe('explainRequest', () => {
  it('defaults the instant to now, the command to open and the channel to the lock\'s first', () => {
    expect(DEFAULT_COMMAND).toBe('open');
    expect(explainRequest({}, AT, ['nfccard', 'btlespp'], null)).toEqual({ command: 'open', channel: 'nfccard', at: AT, lockTime: AT });
  });

  it('keeps what was asked', () => {
    expect(explainRequest({ at: BEGIN, command: 'clos', channel: 'btlespp' }, AT, ['nfccard'], null)).toEqual({
      command: 'clos',
      channel: 'btlespp',
      at: BEGIN,
      lockTime: BEGIN,
    });
  });

  it('asks over the first channel of the vocabulary when the lock lists none', () => {
    expect(explainRequest({}, AT, [], null).channel).toBe('btlespp');
  });

  it('judges the instant on the lock\'s clock: offset by its estimate, either way, and as the server\'s while none was made', () => {
    expect(explainRequest({ at: BEGIN }, AT, ['btlespp'], 90_000)).toMatchObject({ at: BEGIN, lockTime: BEGIN + 90_000 });
    expect(explainRequest({ at: BEGIN }, AT, ['btlespp'], -90_000)).toMatchObject({ at: BEGIN, lockTime: BEGIN - 90_000 });
    expect(explainRequest({}, AT, ['btlespp'], 0)).toMatchObject({ at: AT, lockTime: AT });
  });
});

describe('lockView', () => {
  const facts = (overrides: Partial<LockFacts> = {}): LockFacts => ({
    issuer: ISSUER,
    securedObjectId: 'door',
    maxCredentialLifetime: LIFETIME,
    channels: ['btlespp'],
    publishedKids: new Set(['key-1']),
    appliedThrough: 7,
    keySetSeq: 7,
    keyAnnouncements: new Map([['key-1', 7]]),
    holderBinding: 'optional',
    holderBindingSeq: 0,
    keyRevocations: new Map(),
    clockOffsetMs: null,
    lockState: { mode: 'normal', serial: 0 },
    ...overrides,
  });

  it('carries the facts read, with the revocations applied among the tickets judged', () => {
    const tickets = [ticket({ id: 'applied', revokedAt: BEGIN, revocationAppliedAt: BEGIN + 1 }), ticket({ id: 'pending', revokedAt: BEGIN }), ticket({ id: 'valid' })];
    expect(lockView(facts({ clockOffsetMs: -5_000 }), tickets)).toEqual(lock({ revoked: new Set(['applied']), clockOffsetMs: -5_000 }));
  });

  it('the lock state is applied once the lock acknowledged its serial', () => {
    expect(lockView(facts({ appliedThrough: 9, lockState: { mode: 'lockdown', serial: 9 } }), [])).toMatchObject({ lockMode: 'lockdown', lockStateApplied: true });
    expect(lockView(facts({ appliedThrough: 8, lockState: { mode: 'lockdown', serial: 9 } }), [])).toMatchObject({ lockMode: 'lockdown', lockStateApplied: false });
    expect(lockView(facts({ appliedThrough: null, lockState: { mode: 'lockdown', serial: 9 } }), [])).toMatchObject({ lockStateApplied: false });
    // Ended at 12; the lock acknowledged 10, where the lockdown of 9 was in force: the end is pending.
    expect(lockView(facts({ appliedThrough: 10, lockState: { mode: 'normal', serial: 12, heldMode: 'lockdown' } }), [])).toMatchObject({
      lockMode: 'normal',
      lockStateApplied: false,
      lockdownEndPending: true,
    });
    expect(lockView(facts({ appliedThrough: 8, lockState: { mode: 'normal', serial: 12, heldMode: 'normal' } }), [])).toMatchObject({ lockdownEndPending: false });
    expect(lockView(facts({ appliedThrough: 12, lockState: { mode: 'normal', serial: 12, heldMode: null } }), [])).toMatchObject({ lockdownEndPending: false });
  });

  it('a key-set change is pending while the lock\'s applied position is below it, or the lock was never seen', () => {
    expect(lockView(facts({ appliedThrough: 7, keySetSeq: 7 }), []).keySetPending).toBe(false);
    expect(lockView(facts({ appliedThrough: 8, keySetSeq: 7 }), []).keySetPending).toBe(false);
    expect(lockView(facts({ appliedThrough: 6, keySetSeq: 7 }), []).keySetPending).toBe(true);
    expect(lockView(facts({ appliedThrough: null, keySetSeq: 7 }), []).keySetPending).toBe(true);
    // A tenant with no key-set change yet: nothing to learn, whether or not the lock was seen.
    expect(lockView(facts({ appliedThrough: null, keySetSeq: 0 }), []).keySetPending).toBe(false);
  });

  it('a published key announced after the lock\'s applied position is one it does not know; a lock that never acknowledged a position is judged to know all', () => {
    const announced = new Map([['key-1', 3], ['key-2', 8], ['key-gone', 9]]);
    const published = new Set(['key-1', 'key-2']);
    const view = (appliedThrough: number | null) => lockView(facts({ appliedThrough, keySetSeq: 8, keyAnnouncements: announced, publishedKids: published }), []);
    expect(view(7).unknownKids).toEqual(new Set(['key-2']));
    expect(view(8).unknownKids).toEqual(new Set());
    expect(view(2).unknownKids).toEqual(new Set(['key-1', 'key-2']));
    expect(view(null).unknownKids).toEqual(new Set());
    expect(view(0).unknownKids).toEqual(new Set());
  });

  it('a policy change is pending while the lock\'s applied position is below it', () => {
    expect(lockView(facts({ appliedThrough: 7, holderBindingSeq: 7 }), []).holderBindingPending).toBe(false);
    expect(lockView(facts({ appliedThrough: 6, holderBindingSeq: 7 }), []).holderBindingPending).toBe(true);
    expect(lockView(facts({ appliedThrough: null, holderBindingSeq: 0 }), []).holderBindingPending).toBe(false);
  });

  it('a key revocation is applied once the lock acknowledged its position, pending before', () => {
    const keyRevocations = new Map([['applied', 7], ['pending', 8]]);
    expect(lockView(facts({ appliedThrough: 7, keyRevocations }), [])).toMatchObject({ revokedKeys: new Set(['applied']), pendingRevokedKeys: new Set(['pending']) });
    expect(lockView(facts({ appliedThrough: null, keyRevocations }), [])).toMatchObject({ revokedKeys: new Set(), pendingRevokedKeys: new Set(['applied', 'pending']) });
  });
});

describe('decodeCredential', () => {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

  it('reads the protected header and the claims without verifying (the lock\'s key check is explainTicket\'s)', () => {
    expect(decodeCredential(`${part(HEADER)}.${part(claims())}.c2lnbmF0dXJl`)).toEqual({ header: HEADER, claims: claims() });
  });

  it('answers an undecodable part as null, so the rule refuses it as malformed', () => {
    expect(decodeCredential('not a credential')).toEqual({ header: null, claims: null });
    expect(decodeCredential(`${part(HEADER)}.bm90IGpzb24.c2lnbmF0dXJl`)).toEqual({ header: HEADER, claims: null });
    const evidence: TicketEvidence = { ticket: ticket(), held: decodeCredential('not a credential'), onceDownloaded: null };
    expect(codes(explainTicket(evidence, lock(), request(), AT))).toEqual(['malformed-credential']);
  });
});
