// The credential service's rules that need no database (docs/api-reference.md 8.1, 8.2): the horizon, renewal at
// half-life, and one issuer look-up however many credentials a cold process signs at once.
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Database } from '../../../src/db/database.js';
import { createCredentialService, type SignableTicket, type StoredCredential } from '../../../src/services/credential.service.js';
import type { TicketKeyService } from '../../../src/services/keys/ticket-keys.service.js';
import { CREDENTIAL_NBF_SKEW_SECONDS, CREDENTIAL_TYPE, checkCredential } from '../../../src/shared/credential-check.js';
import { secretsKeyOf } from '../../../src/shared/crypto.js';

const LIFETIME_S = 7 * 86400;
const NOW = Date.UTC(2026, 5, 1, 8, 0, 0, 400);
const { privateKey } = generateKeyPairSync('ed25519');

function service(queries: string[] = []) {
  const db = {
    async query(sql: string) {
      queries.push(sql);
      await new Promise((resolve) => setTimeout(resolve, 5));
      return { rows: [{ id: 'tenant-1', name: 'acme', created_at: 0 }] };
    },
  } as unknown as Database;
  const keys = {
    signingKey: async () => ({ kid: 'k1', alg: 'EdDSA' as const, privateKey }),
    publicJwks: () => [{ kty: 'OKP', kid: 'k1', alg: 'EdDSA' }],
  } as unknown as TicketKeyService;
  return createCredentialService({ db, publicUrl: 'https://acs.example/', keys, secretsKey: secretsKeyOf(Buffer.alloc(32, 7)), maxLifetimeSeconds: LIFETIME_S });
}

const ticket = (overrides: Partial<SignableTicket> = {}): SignableTicket =>
  ({
    id: '0b9a3d4e-0000-4000-8000-000000000001',
    tenantId: 'tenant-1',
    securedObjectId: 'front-door',
    mobileDeviceId: 'phone-1',
    beginDate: NOW - 1000,
    endDate: NOW + 365 * 86400_000,
    commands: ['open'],
    channels: ['btlespp'],
    createdAt: NOW - 1000,
    revokedAt: null,
    downloadedAt: null,
    accessPermissionId: null,
    schedule: null,
    lockTimeZone: 'UTC',
    ...overrides,
  }) as SignableTicket;

describe('credential service', () => {
  it('carries a schedule as win: its windows in the lock\'s zone within [max(nbf, iat - lifetime), exp), [] when none (docs/api-reference.md 9)', async () => {
    const credentials = service();
    const schedule = { weekly: [{ days: ['MO', 'TU', 'WE', 'TH', 'FR'] as ('MO' | 'TU' | 'WE' | 'TH' | 'FR')[], from: '08:00', to: '12:00' }] };
    // Thursday 2026-03-26 10:00 UTC; Berlin moves from +01:00 to +02:00 on Sunday 2026-03-29.
    const at = Date.UTC(2026, 2, 26, 10, 0, 0);
    const claims = await credentials.claimsOf(ticket({ beginDate: at - 86400_000, schedule, lockTimeZone: 'Europe/Berlin' }), at);
    // From nbf (the ticket began Wednesday, but nbf is iat minus the skew: Thursday 09:55Z, inside Thursday's
    // 07:00Z–11:00Z window, docs/security-cases.md H54) to exp a week after iat.
    expect(claims.win).toEqual([
      [at - CREDENTIAL_NBF_SKEW_SECONDS * 1000, Date.UTC(2026, 2, 26, 11)],
      [Date.UTC(2026, 2, 27, 7), Date.UTC(2026, 2, 27, 11)],
      [Date.UTC(2026, 2, 30, 6), Date.UTC(2026, 2, 30, 10)],
      [Date.UTC(2026, 2, 31, 6), Date.UTC(2026, 2, 31, 10)],
      [Date.UTC(2026, 3, 1, 6), Date.UTC(2026, 3, 1, 10)],
      [Date.UTC(2026, 3, 2, 6), Date.UTC(2026, 3, 2, 10)],
    ]);
    // A ticket valid over one weekend only: the schedule never opens in its span, so win is [] (not absent).
    const weekend = await credentials.claimsOf(
      ticket({ beginDate: Date.UTC(2026, 2, 28), endDate: Date.UTC(2026, 2, 29, 12), schedule, lockTimeZone: 'Europe/Berlin' }),
      Date.UTC(2026, 2, 28),
    );
    expect(weekend.win).toEqual([]);
    // A ticket valid since 1970: the windows start one lifetime before iat, not in 1970.
    const old = await credentials.claimsOf(ticket({ beginDate: 0, schedule, lockTimeZone: 'UTC' }), at);
    expect(old.win![0]![0]).toBeGreaterThanOrEqual(Math.floor(at / 1000) * 1000 - LIFETIME_S * 1000);
    // No schedule: no win member at all.
    expect('win' in (await credentials.claimsOf(ticket(), at))).toBe(false);
  });

  it('cuts the windows at the ticket\'s [beginDate, endDate): none starts before nor ends after it, across a DST night too', async () => {
    const credentials = service();
    const nights = { weekly: [{ days: ['SA'] as 'SA'[], from: '22:00', to: '06:00' }] };
    // Berlin's spring-forward night: Saturday 22:00 CET (21:00Z) to Sunday 06:00 CEST (04:00Z), seven hours. A ticket
    // from 23:30 CET (22:30Z, not a whole second's start: 250 ms in) to 03:30 CEST (01:30Z) holds only its middle.
    const beginDate = Date.UTC(2026, 2, 28, 22, 30, 0, 250);
    const endDate = Date.UTC(2026, 2, 29, 1, 30);
    const claims = await credentials.claimsOf(ticket({ beginDate, endDate, schedule: nights, lockTimeZone: 'Europe/Berlin' }), beginDate - 3600_000);
    // nbf rounds beginDate up to the whole second, and the lock checks both, so the window starts at nbf.
    expect(claims.win).toEqual([[Date.UTC(2026, 2, 28, 22, 30, 1), endDate]]);
    // An endDate that is not a whole second: exp rounds down, and the window ends at exp.
    const cut = await credentials.claimsOf(ticket({ beginDate, endDate: endDate + 700, schedule: nights, lockTimeZone: 'Europe/Berlin' }), beginDate);
    expect(cut.exp * 1000).toBe(endDate);
    expect(cut.win).toEqual([[Date.UTC(2026, 2, 28, 22, 30, 1), endDate]]);
  });

  it('looks the tenant\'s issuer up once for 500 credentials signed at once on a cold process', async () => {
    const queries: string[] = [];
    const credentials = service(queries);
    const signed = await Promise.all(Array.from({ length: 500 }, () => credentials.sign(ticket(), NOW)));
    expect(queries).toHaveLength(1);
    const payload = JSON.parse(Buffer.from(signed[0]!.credential.split('.')[1]!, 'base64url').toString()) as { iss: string };
    expect(payload.iss).toBe('https://acs.example/tenants/acme');
  });

  it('bounds exp by one lifetime from iat and by endDate, rounding down', async () => {
    const credentials = service();
    const long = await credentials.sign(ticket(), NOW);
    expect(long.issuedAt).toBe(Math.floor(NOW / 1000) * 1000);
    expect(long.expiresAt - long.issuedAt).toBe(LIFETIME_S * 1000);
    const short = await credentials.sign(ticket({ endDate: NOW + 5_999 }), NOW);
    expect(short.expiresAt).toBe(Math.floor((NOW + 5_999) / 1000) * 1000);
  });

  it('builds the claims it signs without signing them (claimsOf, for the explain service of docs/api-reference.md 8.6)', async () => {
    const credentials = service();
    const issued = ticket({ beginDate: NOW + 1_250, endDate: NOW + 3 * 86400_000 + 700 });
    const claims = await credentials.claimsOf(issued, NOW);
    const signed = await credentials.sign(issued, NOW);
    // The payload signed is exactly those claims, member for member and in order.
    expect(Buffer.from(signed.credential.split('.')[1]!, 'base64url').toString()).toBe(JSON.stringify(claims));
    expect(claims).toEqual({
      iss: 'https://acs.example/tenants/acme',
      jti: issued.id,
      sub: 'phone-1',
      aud: 'front-door',
      nbf: Math.ceil((NOW + 1_250) / 1000),
      exp: Math.floor((NOW + 3 * 86400_000 + 700) / 1000),
      iat: Math.floor(NOW / 1000),
      beginDate: issued.beginDate,
      endDate: issued.endDate,
      cmd: ['open'],
      chn: ['btlespp'],
    });
  });

  // docs/security-cases.md H54: a ticket that began at 0 (or long ago) gives no credential a lock with a reset clock accepts.
  it('starts a credential no earlier than its beginDate and no earlier than iat minus the skew', async () => {
    const credentials = service();
    const iat = Math.floor(NOW / 1000);
    for (const beginDate of [0, NOW - 30 * 86400_000, NOW - (CREDENTIAL_NBF_SKEW_SECONDS + 1) * 1000]) {
      const claims = await credentials.claimsOf(ticket({ beginDate }), NOW);
      expect(claims.nbf, String(beginDate)).toBe(iat - CREDENTIAL_NBF_SKEW_SECONDS);
      const lock = { issuer: claims.iss, securedObjectId: 'front-door', maxCredentialLifetime: LIFETIME_S, revoked: new Set<string>() };
      const header = { alg: 'EdDSA', kid: 'k1', typ: CREDENTIAL_TYPE };
      // A lock whose clock was reset (to 1970, or to a day before the signature) refuses it; just after nbf it opens.
      for (const at of [0, 86400_000, NOW - 86400_000, claims.nbf * 1000 - 1]) {
        expect(checkCredential(header, claims, lock, { command: 'open', channel: 'btlespp', at }), `${beginDate} at ${at}`).toEqual({ decision: 'deny', reason: 'not-yet-valid' });
      }
      expect(checkCredential(header, claims, lock, { command: 'open', channel: 'btlespp', at: claims.nbf * 1000 }).decision).toBe('open');
    }
    // A ticket beginning later, or within the skew, starts at its beginDate rounded up.
    expect((await credentials.claimsOf(ticket({ beginDate: NOW - 60_000 }), NOW)).nbf).toBe(Math.ceil((NOW - 60_000) / 1000));
    expect((await credentials.claimsOf(ticket({ beginDate: NOW + 3_600_500 }), NOW)).nbf).toBe(Math.ceil((NOW + 3_600_500) / 1000));
  });

  it('renews past half-life only when a new credential would last longer, and always when its key is gone', () => {
    const credentials = service();
    const stored: StoredCredential = { sealed: Buffer.alloc(0), kid: 'k1', issuedAt: NOW, expiresAt: NOW + LIFETIME_S * 1000 };
    const published = new Set(['k1']);
    const halfLife = (LIFETIME_S * 1000) / 2;
    expect(credentials.needsSigning(ticket(), null, published, NOW)).toBe(true);
    expect(credentials.needsSigning(ticket(), stored, published, NOW + halfLife)).toBe(false);
    expect(credentials.needsSigning(ticket(), stored, published, NOW + halfLife + 1)).toBe(true);
    expect(credentials.needsSigning(ticket(), stored, new Set(['k2']), NOW)).toBe(true);
    // Capped by the ticket's end: signing again would not extend it, so the stored one is handed out.
    const capped: StoredCredential = { ...stored, expiresAt: NOW + 2000 };
    expect(credentials.needsSigning(ticket({ endDate: NOW + 2000 }), capped, published, NOW + 1500)).toBe(false);
  });

  it('signs nothing for a ticket beginning beyond the horizon and names the first second a credential would open', () => {
    const credentials = service();
    const beginDate = NOW + LIFETIME_S * 1000 + 10_250;
    const from = credentials.availableFrom(ticket({ beginDate }), NOW)!;
    expect(from).toBe(Math.ceil(beginDate / 1000) * 1000 - LIFETIME_S * 1000 + 1000);
    expect(credentials.availableFrom(ticket({ beginDate }), from - 1)).toBe(from);
    expect(credentials.availableFrom(ticket({ beginDate }), from)).toBeUndefined();
  });

  it('seals a credential bound to its ticket: another ticket\'s row cannot carry it', () => {
    const credentials = service();
    const sealed = credentials.seal('tenant-1', 'ticket-a', 'a.b.c');
    expect(sealed.toString('latin1')).not.toContain('a.b.c');
    expect(credentials.unseal('tenant-1', 'ticket-a', sealed)).toBe('a.b.c');
    expect(() => credentials.unseal('tenant-1', 'ticket-b', sealed)).toThrow();
  });
});
