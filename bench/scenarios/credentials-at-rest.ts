// Micro-benchmarks for credentials at rest (docs/api-reference.md 8.2, docs/security-cases.md G48): what a download
// pays per credential when it reuses one stored sealed under SECRETS_KEY (unseal) against signing it anew each time.
import { generateKeyPairSync, randomBytes, randomUUID, type KeyObject } from 'node:crypto';
import type { MicroBenchmark } from '../types.js';

/** Distinct tickets cycled through, so no call sees the same input twice in a row. */
const TICKETS = 500;
/** A phone's download page in the phone-download scale run: its credentials are signed at once (Promise.all). */
const DOWNLOAD = 500;
const DAY_MS = 24 * 3600_000;
/** CREDENTIAL_MAX_LIFETIME's default, seconds. */
const LIFETIME_S = 7 * 24 * 3600;

type Algorithm = 'EdDSA' | 'ES256';

interface BenchTicket {
  id: string;
  tenantId: string;
  mobileDeviceId: string;
  securedObjectId: string;
  beginDate: number;
  endDate: number;
}

/** Tickets shaped like the phone-download run's: one phone, 50 locks, begun, ending within a year. */
function benchTickets(): BenchTicket[] {
  const tenantId = randomUUID();
  const now = Date.now();
  return Array.from({ length: TICKETS }, (_, i) => ({
    id: randomUUID(),
    tenantId,
    mobileDeviceId: 'bench-phone-1',
    securedObjectId: `bench-lock-${(i % 50) + 1}`,
    beginDate: now - (i % 90) * DAY_MS,
    endDate: now + ((i % 365) + 1) * DAY_MS,
  }));
}

function signingKey(alg: Algorithm): { kid: string; alg: Algorithm; privateKey: KeyObject } {
  const { privateKey } = alg === 'EdDSA' ? generateKeyPairSync('ed25519') : generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { kid: randomUUID(), alg, privateKey };
}

/** The claims credential.service.ts signs (docs/api-reference.md 6.3), with a 7-day lifetime. */
function claimsOf(ticket: BenchTicket, now: number) {
  const iat = Math.floor(now / 1000);
  return {
    iss: 'http://127.0.0.1:8080/tenants/bench-credentials',
    jti: ticket.id,
    sub: ticket.mobileDeviceId,
    aud: ticket.securedObjectId,
    nbf: Math.ceil(ticket.beginDate / 1000),
    exp: Math.min(Math.floor(ticket.endDate / 1000), iat + LIFETIME_S),
    iat,
    beginDate: ticket.beginDate,
    endDate: ticket.endDate,
    cmd: ['open'],
    chn: ['btlespp'],
  };
}

/** The service's own modules, loaded only when one of these benchmarks runs. */
async function serviceCrypto() {
  const [{ encrypt, decrypt }, { signCompactJws }, { CREDENTIAL_TYPE }] = await Promise.all([
    import('../../src/shared/crypto.js'),
    import('../../src/shared/jws.js'),
    import('../../src/shared/credential-check.js'),
  ]);
  return { encrypt, decrypt, signCompactJws, CREDENTIAL_TYPE };
}

/** The additional data credential.service.ts binds a sealed credential to. */
const aadOf = (ticket: BenchTicket) => `ticket-credential:${ticket.tenantId}:${ticket.id}`;

const unseal: MicroBenchmark = {
  name: 'lock trust: unseal a stored credential (AES-256-GCM)',
  description:
    "crypto.ts decrypt(SECRETS_KEY, sealed, aad): what a download pays per stored credential it hands out again (an EdDSA " +
    `credential of the phone-download run's shape, ${TICKETS} distinct ones in turn)`,
  async prepare() {
    const { encrypt, decrypt, signCompactJws, CREDENTIAL_TYPE } = await serviceCrypto();
    const key = signingKey('EdDSA');
    const secretsKey = randomBytes(32);
    const now = Date.now();
    const stored = await Promise.all(
      benchTickets().map(async (ticket) => {
        const credential = await signCompactJws(key, CREDENTIAL_TYPE, claimsOf(ticket, now));
        return { ticket, credential, sealed: encrypt(secretsKey, credential, aadOf(ticket)) };
      }),
    );
    // Fails before timing if the round trip is wrong: a benchmark of failures would be meaningless.
    if (decrypt(secretsKey, stored[0]!.sealed, aadOf(stored[0]!.ticket)) !== stored[0]!.credential) throw new Error('unseal did not round-trip');
    let next = 0;
    return {
      operation: async () => {
        const { ticket, sealed } = stored[next++ % stored.length]!;
        return decrypt(secretsKey, sealed, aadOf(ticket));
      },
      close: async () => undefined,
    };
  },
};

const seal: MicroBenchmark = {
  name: 'lock trust: seal a signed credential (AES-256-GCM)',
  description: 'crypto.ts encrypt(SECRETS_KEY, credential, aad): what storing adds to each credential a download signs',
  async prepare() {
    const { encrypt, signCompactJws, CREDENTIAL_TYPE } = await serviceCrypto();
    const key = signingKey('EdDSA');
    const secretsKey = randomBytes(32);
    const now = Date.now();
    const signed = await Promise.all(
      benchTickets().map(async (ticket) => ({ ticket, credential: await signCompactJws(key, CREDENTIAL_TYPE, claimsOf(ticket, now)) })),
    );
    let next = 0;
    return {
      operation: async () => {
        const { ticket, credential } = signed[next++ % signed.length]!;
        return encrypt(secretsKey, credential, aadOf(ticket));
      },
      close: async () => undefined,
    };
  },
};

/** Signing anew: one credential per call (its latency), or a download's page at once (what each costs in a batch). */
function signAnew(alg: Algorithm, batch: boolean): MicroBenchmark {
  return {
    name: batch ? `lock trust: sign ${DOWNLOAD} credentials at once (${alg})` : `lock trust: sign a credential anew (${alg})`,
    description:
      `jws.ts signCompactJws with an ${alg === 'EdDSA' ? 'Ed25519' : 'ES256 (P-256)'} key over the claims credential.service.ts signs, ` +
      (batch
        ? `${DOWNLOAD} awaited together as a download signs them (on libuv's pool, beside the event loop); cost per credential`
        : 'one at a time (the signature runs on libuv\'s pool: the hop there and back included)'),
    ...(batch ? { itemsPerCall: DOWNLOAD } : {}),
    async prepare() {
      const { signCompactJws, CREDENTIAL_TYPE } = await serviceCrypto();
      const key = signingKey(alg);
      const tickets = benchTickets();
      const sign = (ticket: BenchTicket) => signCompactJws(key, CREDENTIAL_TYPE, claimsOf(ticket, Date.now()));
      let next = 0;
      return {
        operation: batch ? () => Promise.all(tickets.map(sign)) : () => sign(tickets[next++ % tickets.length]!),
        close: async () => undefined,
      };
    },
  };
}

export const credentialsAtRestBenchmarks: MicroBenchmark[] = [
  unseal,
  seal,
  signAnew('EdDSA', false),
  signAnew('ES256', false),
  signAnew('EdDSA', true),
  signAnew('ES256', true),
];
