// The one rule "does this credential open this lock" (src/shared/credential-check.ts, docs/api-reference.md 6.3, 8.1, 8.2,
// 9) on claims given as values: every refusal, each edge to the millisecond, and that nothing malformed fails open.
import { describe, expect, it } from 'vitest';
import { CREDENTIAL_LIMITS, checkCredential, nextWindowStart, parseCredentialClaims, type LockTrustState } from '../../../src/shared/credential-check.js';

const ISSUER = 'https://locks.test/tenants/acme';
const BEGIN = Date.UTC(2026, 8, 1, 8, 0, 0, 250); // not a whole second: nbf rounds up, exp rounds down
const END = BEGIN + 86_400_000;
const LIFETIME = 604_800;
const HEADER = { alg: 'EdDSA', kid: 'acme-1', typ: 'ticket+jwt' };

const claims = (overrides: Record<string, unknown> = {}): Record<string, unknown> => {
  const result: Record<string, unknown> = {
    iss: ISSUER,
    jti: 'ticket-1',
    sub: 'phone',
    aud: 'door',
    nbf: Math.ceil(BEGIN / 1000),
    exp: Math.floor(END / 1000),
    iat: Math.floor(BEGIN / 1000) - 60,
    beginDate: BEGIN,
    endDate: END,
    cmd: ['open', 'clos'],
    chn: ['btlespp'],
    ...overrides,
  };
  for (const [name, value] of Object.entries(result)) if (value === undefined) delete result[name];
  return result;
};

const lock = (overrides: Partial<LockTrustState> = {}): LockTrustState => ({
  issuer: ISSUER,
  securedObjectId: 'door',
  maxCredentialLifetime: LIFETIME,
  revoked: new Set<string>(),
  ...overrides,
});

const AT = BEGIN + 3_600_000;
const check = (overrides: Record<string, unknown> = {}, at: unknown = AT, state: LockTrustState = lock(), command = 'open', channel = 'btlespp') =>
  checkCredential(HEADER, claims(overrides), state, { command, channel, at: at as number });
const reason = (...args: Parameters<typeof check>) => check(...args).reason;

describe('checkCredential', () => {
  it('opens for a credential of its issuer, for itself, now, with the command and the channel', () => {
    expect(check()).toEqual({ decision: 'open', reason: 'ok' });
    expect(check({}, AT, lock(), 'clos')).toEqual({ decision: 'open', reason: 'ok' });
  });

  it.each([NaN, Infinity, -Infinity, 1.5, Number.MAX_SAFE_INTEGER + 1, '1788249600000', '', null, 1788249600000n])(
    'denies at an instant that is not a safe integer of milliseconds: %s',
    (at) => {
      expect(check({}, at)).toEqual({ decision: 'deny', reason: 'malformed' });
      // Even a credential that would otherwise fail on a comparison gets no further.
      expect(reason({ nbf: 'soon' }, at)).toBe('malformed');
    },
  );

  it.each(['iss', 'jti', 'sub', 'aud', 'nbf', 'exp', 'iat', 'beginDate', 'endDate', 'cmd', 'chn'])('denies a credential without %s', (claim) => {
    expect(check({ [claim]: undefined })).toEqual({ decision: 'deny', reason: 'malformed' });
  });

  it.each([
    ['iss', 42],
    ['iss', [ISSUER]],
    ['jti', 7],
    ['sub', null],
    ['aud', ['door']],
    ['nbf', String(Math.ceil(BEGIN / 1000))],
    ['nbf', Math.ceil(BEGIN / 1000) + 0.5],
    ['exp', NaN],
    ['exp', Infinity],
    ['exp', Math.floor(END / 1000) + 0.25],
    ['iat', '0'],
    ['beginDate', String(BEGIN)],
    ['beginDate', BEGIN + 0.5],
    ['endDate', Infinity],
    ['endDate', null],
    ['endDate', Number.MAX_SAFE_INTEGER + 2],
    ['cmd', 'open'],
    ['cmd', ['open', 1]],
    ['chn', 'btlespp'],
    ['chn', [null]],
    ['win', 'always'],
    ['win', [[BEGIN, END, 0]]],
    ['win', [[BEGIN, String(END)]]],
  ])('denies a credential whose %s is %j', (claim, value) => {
    expect(check({ [claim]: value })).toEqual({ decision: 'deny', reason: 'malformed' });
  });

  it('denies claims that are not an object', () => {
    for (const payload of [null, [], 'claims', 42]) {
      expect(checkCredential(HEADER, payload, lock(), { command: 'open', channel: 'btlespp', at: AT })).toEqual({ decision: 'deny', reason: 'malformed' });
    }
    expect(parseCredentialClaims(claims())).toEqual(claims());
  });

  it('denies a header that is not a ticket credential (an access token is at+jwt)', () => {
    for (const header of [{ ...HEADER, typ: 'at+jwt' }, { ...HEADER, typ: 'JWT' }, { alg: 'EdDSA', kid: 'acme-1' }, null, 'ticket+jwt']) {
      expect(checkCredential(header, claims(), lock(), { command: 'open', channel: 'btlespp', at: AT })).toEqual({ decision: 'deny', reason: 'malformed' });
    }
  });

  it('denies another issuer, even for a lock with the same id (docs/security-cases.md G39)', () => {
    expect(check({ iss: 'https://locks.test/tenants/globex' })).toEqual({ decision: 'deny', reason: 'wrong-issuer' });
    expect(reason({ iss: `${ISSUER}/` })).toBe('wrong-issuer');
    expect(reason({ iss: ISSUER.toUpperCase() })).toBe('wrong-issuer');
  });

  it('denies a credential for another lock', () => {
    expect(check({ aud: 'garage' })).toEqual({ decision: 'deny', reason: 'wrong-lock' });
    expect(reason({ aud: 'Door' })).toBe('wrong-lock');
  });

  it("denies a credential that lives longer than the lock's maximum, to the second (docs/api-reference.md 8.2)", () => {
    const iat = Math.floor(BEGIN / 1000);
    expect(reason({ iat, exp: iat + LIFETIME, endDate: BEGIN + 30 * 86_400_000 })).toBe('ok');
    expect(check({ iat, exp: iat + LIFETIME + 1, endDate: BEGIN + 30 * 86_400_000 })).toEqual({ decision: 'deny', reason: 'lifetime-exceeded' });
    // A lock provisioned with a shorter maximum refuses what another would take.
    expect(reason({}, AT, lock({ maxCredentialLifetime: 3600 }))).toBe('lifetime-exceeded');
  });

  it('is valid from max(nbf in ms, beginDate) to the millisecond', () => {
    const nbfMs = Math.ceil(BEGIN / 1000) * 1000;
    expect(nbfMs).toBeGreaterThan(BEGIN);
    expect(reason({}, BEGIN)).toBe('not-yet-valid');
    expect(reason({}, nbfMs - 1)).toBe('not-yet-valid');
    expect(reason({}, nbfMs)).toBe('ok');
    // beginDate decides when it lies after nbf (a credential signed with an nbf too early).
    expect(reason({ nbf: Math.floor(BEGIN / 1000) - 10 }, BEGIN - 1)).toBe('not-yet-valid');
    expect(reason({ nbf: Math.floor(BEGIN / 1000) - 10 }, BEGIN)).toBe('ok');
  });

  it('is valid until min(exp in ms, endDate), exclusive, to the millisecond', () => {
    const expMs = Math.floor(END / 1000) * 1000;
    expect(expMs).toBeLessThan(END);
    expect(reason({}, expMs - 1)).toBe('ok');
    expect(reason({}, expMs)).toBe('expired');
    expect(reason({}, END)).toBe('expired');
    // endDate decides when it lies before exp (a credential signed with an exp too late).
    const late = { exp: Math.floor(END / 1000) + 10 };
    expect(reason(late, END - 1)).toBe('ok');
    expect(reason(late, END)).toBe('expired');
    expect(reason(late, END + 5000)).toBe('expired');
  });

  it('opens only inside a window of its schedule (docs/api-reference.md 9)', () => {
    const win = [
      [AT - 1000, AT + 1000],
      [AT + 5000, AT + 6000],
    ];
    expect(reason({ win }, AT - 1000)).toBe('ok');
    expect(reason({ win }, AT + 999)).toBe('ok');
    expect(reason({ win }, AT + 1000)).toBe('outside-schedule');
    expect(reason({ win }, AT + 5500)).toBe('ok');
    expect(reason({ win: [] }, AT)).toBe('outside-schedule');
  });

  it('fails closed on a win that is not a list of [integer, integer] windows: a present but broken win is never "no schedule"', () => {
    for (const win of [null, {}, { 0: [BEGIN, END] }, 0, true, '', [[AT]], [[AT - 1, AT + 1.5]], [[AT - 0.5, AT + 1]], [[NaN, Infinity]], [[-Infinity, Infinity]], [[0, Number.MAX_SAFE_INTEGER + 1]], [[[AT - 1, AT + 1]]], [null], [[AT - 1, AT + 1], 'always'], [{ 0: AT - 1, 1: AT + 1, length: 2 }]]) {
      expect(reason({ win }), JSON.stringify(win)).toBe('malformed');
    }
  });

  it('opens only inside a window of win, whatever its order, overlaps, reversed or empty windows and size, and never outside [nbf, exp) or [beginDate, endDate)', () => {
    // Unsorted and overlapping windows: the lock opens in their union, nowhere else.
    const win = [
      [AT + 5_000, AT + 9_000],
      [AT - 1_000, AT + 1_000],
      [AT + 500, AT + 2_000],
    ];
    for (const at of [AT - 1_000, AT, AT + 1_999, AT + 5_000, AT + 8_999]) expect(reason({ win }, at), String(at)).toBe('ok');
    for (const at of [AT - 1_001, AT + 2_000, AT + 4_999, AT + 9_000]) expect(reason({ win }, at), String(at)).toBe('outside-schedule');
    // A reversed or empty window holds no instant.
    expect(reason({ win: [[AT + 1_000, AT - 1_000]] })).toBe('outside-schedule');
    expect(reason({ win: [[AT, AT]] })).toBe('outside-schedule');
    // A window reaching beyond the credential's validity does not widen it.
    const everything = [[0, Number.MAX_SAFE_INTEGER]];
    expect(reason({ win: everything }, BEGIN)).toBe('not-yet-valid');
    expect(reason({ win: everything }, END)).toBe('expired');
    expect(reason({ win: everything }, Math.floor(END / 1000) * 1000)).toBe('expired');
    // As many windows as a lock reads (docs/lock-integration.md 3.1), none around AT: refused, and the one that holds
    // it is found; one more than a lock reads is malformed, whatever it holds.
    const many = Array.from({ length: CREDENTIAL_LIMITS.windows - 1 }, (_, index) => [AT + 10 + index * 2, AT + 11 + index * 2]);
    expect(reason({ win: many })).toBe('outside-schedule');
    expect(reason({ win: [...many, [AT, AT + 1]] })).toBe('ok');
    expect(reason({ win: [...many, [AT, AT + 1], [AT, AT + 1]] })).toBe('malformed');
  });

  it('denies a credential signed more than 300 s in the lock\'s future, even when nbf has passed (docs/lock-integration.md 3.4)', () => {
    const iat = Math.floor(AT / 1000);
    const early = { nbf: iat - 3600, beginDate: BEGIN }; // a signer that wrote an early nbf: iat alone says too soon
    expect(reason({ ...early, iat: iat + 301, exp: iat + 3600 }, AT)).toBe('not-yet-valid');
    expect(reason({ ...early, iat: iat + 300, exp: iat + 3600 }, AT)).toBe('ok');
  });

  it('reads cnf as exactly {jkt} with a SHA-256 thumbprint, and refuses empty or overlong names (docs/lock-integration.md 3.1)', () => {
    const jkt = 'maDJzWYN0nZQdJW2I-y2W2Mv_30Af-t8it9NEhbL3R8';
    expect(parseCredentialClaims(claims({ cnf: { jkt } }))?.cnf).toEqual({ jkt });
    expect(parseCredentialClaims(claims())).not.toHaveProperty('cnf');
    for (const cnf of [{}, { jkt: 'short' }, { jkt, jwk: {} }, { jwk: {} }, [jkt], jkt, null, { jkt: `${jkt}=` }]) {
      expect(check({ cnf }), JSON.stringify(cnf)).toEqual({ decision: 'deny', reason: 'malformed' });
    }
    for (const claim of ['jti', 'iss', 'sub', 'aud']) {
      expect(reason({ [claim]: '' }), claim).toBe('malformed');
      expect(reason({ [claim]: 'x'.repeat(CREDENTIAL_LIMITS.textLength + 1) }), claim).toBe('malformed');
    }
    expect(reason({ cmd: Array.from({ length: CREDENTIAL_LIMITS.entries + 1 }, () => 'open') })).toBe('malformed');
    // Unknown claims are ignored, and so are command values the lock does not know.
    expect(reason({ note: 'front desk', cmd: ['open', 'fly'] })).toBe('ok');
  });

  it('denies a command or a channel the credential does not permit', () => {
    expect(check({ cmd: ['open'] }, AT, lock(), 'clos')).toEqual({ decision: 'deny', reason: 'command-not-granted' });
    expect(check({ cmd: [] }, AT)).toEqual({ decision: 'deny', reason: 'command-not-granted' });
    expect(check({}, AT, lock(), 'open', 'nfccard')).toEqual({ decision: 'deny', reason: 'channel-not-granted' });
    expect(check({ chn: [] }, AT)).toEqual({ decision: 'deny', reason: 'channel-not-granted' });
  });

  it('denies a revoked ticket, and nobody on a decommissioned lock', () => {
    expect(check({}, AT, lock({ revoked: new Set(['ticket-1']) }))).toEqual({ decision: 'deny', reason: 'revoked' });
    expect(check({}, AT, lock({ revoked: new Set(['ticket-2']) }))).toEqual({ decision: 'open', reason: 'ok' });
    expect(check({}, AT, lock({ decommissioned: true }))).toEqual({ decision: 'deny', reason: 'decommissioned' });
  });

  it('denies everything on a lock that is not provisioned', () => {
    for (const state of [lock({ issuer: '' }), lock({ securedObjectId: '' }), lock({ maxCredentialLifetime: NaN }), lock({ maxCredentialLifetime: 0 }), lock({ maxCredentialLifetime: -1 })]) {
      expect(check({}, AT, state)).toEqual({ decision: 'deny', reason: 'malformed' });
    }
  });
});

describe('nextWindowStart', () => {
  const win: [number, number][] = [
    [5_000, 6_000],
    [1_000, 2_000],
    [9_000, 9_500],
  ];

  it('answers the earliest window starting after the instant, whatever the order of the windows', () => {
    expect(nextWindowStart(win, 0)).toBe(1_000);
    expect(nextWindowStart(win, 1_000)).toBe(5_000);
    expect(nextWindowStart(win, 2_500)).toBe(5_000);
    expect(nextWindowStart(win, 6_000)).toBe(9_000);
  });

  it('answers null when no window starts later, and skips an empty window', () => {
    expect(nextWindowStart(win, 9_000)).toBeNull();
    expect(nextWindowStart([], 0)).toBeNull();
    expect(nextWindowStart([[3_000, 3_000]], 0)).toBeNull();
  });

  it('agrees with checkCredential: refused just before the window it names, opened at its start', () => {
    const windows: [number, number][] = [[AT + 60_000, AT + 120_000]];
    const next = nextWindowStart(windows, AT)!;
    expect(reason({ win: windows }, next - 1)).toBe('outside-schedule');
    expect(reason({ win: windows }, next)).toBe('ok');
  });
});
