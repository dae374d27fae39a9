// Micro-benchmarks of the reference lock at the door (docs/lock-integration.md 3.3, 4): one session, its hello signed
// with the lock's key and the decision on the credential shown, with an unbound credential and with a bound one and
// its proof. The ratio of the two is what holder binding costs a lock (an ES256 verification and a thumbprint).
import { generateKeyPairSync, sign } from 'node:crypto';
import type { MicroBenchmark } from '../types.js';

const ISSUER = 'https://acs.example/tenants/bench';
const LOCK = 'bench-door';
/** Nonces the proofs are made for, cycled: each session's hello names the nonce of the proof shown in it. */
const NONCES = 256;
/** A Monday morning inside every credential's validity. */
const AT = Date.UTC(2026, 0, 5, 10);

function doorBenchmark(bound: boolean): MicroBenchmark {
  return {
    name: bound ? 'reference lock session, bound credential with proof (in-process)' : 'reference lock session, unbound credential (in-process)',
    description:
      'LockSimulator.hello() then decide(): the hello signed with the lock key (ES256), the credential\'s signature ' +
      '(EdDSA), claims, time, command, channel and revocation checks' +
      (bound ? ', then the proof: its jwk thumbprint against cnf.jkt, its ES256 signature, aud, nonce, ath and cmd' : '') +
      '; every decision opens and is logged',
    async prepare() {
      const [{ LockSimulator }, { PROOF_TYPE }, { sha256Base64url }, { es256KeyPair, signEs256 }] = await Promise.all([
        import('../../src/simulator/lock-simulator.js'),
        import('../../src/shared/door-exchange.js'),
        import('../../src/shared/holder-keys.js'),
        import('../../src/simulator/es256.js'),
      ]);
      const tenant = generateKeyPairSync('ed25519');
      const kid = 'bench-ticket-key';
      const publicJwk = { ...tenant.publicKey.export({ format: 'jwk' }), kid, alg: 'EdDSA', use: 'sig' };
      const phone = es256KeyPair();
      const iat = AT / 1000 - 3600;
      const claims = {
        iss: ISSUER,
        jti: 'bench-ticket',
        sub: 'bench-phone',
        aud: LOCK,
        nbf: iat - 300,
        exp: iat + 86_400,
        iat,
        beginDate: AT - 86_400_000,
        endDate: AT + 86_400_000,
        cmd: ['open'],
        chn: ['btlespp'],
        ...(bound ? { cnf: { jkt: phone.thumbprint } } : {}),
      };
      const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
      const input = `${part({ alg: 'EdDSA', kid, typ: 'ticket+jwt' })}.${part(claims)}`;
      const credential = `${input}.${sign(null, Buffer.from(input), tenant.privateKey).toString('base64url')}`;
      const lock = new LockSimulator({ securedObjectId: LOCK, issuer: ISSUER, keys: { keys: [publicJwk] }, maxCredentialLifetime: 604_800 });
      const nonces = Array.from({ length: NONCES }, (_, index) => Buffer.alloc(32, index).toString('base64url'));
      const proofs = nonces.map((nonce) =>
        bound
          ? signEs256(phone.privateKey, { typ: PROOF_TYPE, jwk: phone.publicKey }, { aud: LOCK, nonce, ath: sha256Base64url(credential), cmd: 'open', iat: AT / 1000 })
          : null,
      );
      let session = 0;
      const operation = async () => {
        const index = session++ % NONCES;
        lock.hello(AT, nonces[index]);
        return lock.decide(credential, 'open', AT, 'btlespp', proofs[index]!);
      };
      // Refused before timing if the lock does not open: a benchmark of refusals would measure the wrong path.
      const first = await operation();
      if (first.decision !== 'open') throw new Error(`the reference lock refused the bench credential: ${first.reason}`);
      return { operation, close: async () => undefined };
    },
  };
}

export const doorBenchmarks: MicroBenchmark[] = [doorBenchmark(false), doorBenchmark(true)];
