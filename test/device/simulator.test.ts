// The lock simulator (src/simulator): LockSimulator.decide for every reason, sync paging, and the command line,
// both `npm run simulate -- --help` and a run against a live server that opens, then denies once revoked.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JSONWebKeySet, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockSimulator, type SyncAnswer } from '../../src/simulator/lock-simulator.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { download, phoneToken } from '../helpers/device.js';
import { clientToken, createClient, createTenant } from '../helpers/oauth.js';
import { HOUR, call, device, lock, ticket } from '../helpers/operator.js';
import { ROOT, childEnv, freePort, killAll, spawnNode } from '../helpers/process.js';

const ISSUER = 'http://issuer.test';
const BEGIN = Date.UTC(2026, 8, 1);
const END = BEGIN + 24 * HOUR;
const AT = BEGIN + HOUR;

describe('LockSimulator.decide', () => {
  let privateKey: CryptoKey;
  let otherPrivateKey: CryptoKey;
  let ecPrivateKey: CryptoKey;
  let jwks: JSONWebKeySet;
  const ticketId = randomUUID();

  const claims = (overrides: Record<string, unknown> = {}) => ({
    iss: ISSUER,
    jti: ticketId,
    sub: 'phone',
    aud: 'door',
    nbf: Math.floor(BEGIN / 1000),
    exp: Math.ceil(END / 1000),
    iat: Math.floor(BEGIN / 1000),
    beginDate: BEGIN,
    endDate: END,
    cmd: ['open', 'clos'],
    chn: ['btlespp'],
    ...overrides,
  });

  /** A credential as the server makes it (contract 6.3), with any claim or header member replaced. */
  function credential(overrides: Record<string, unknown> = {}, header: Record<string, unknown> = {}, key: CryptoKey = privateKey): Promise<string> {
    const payload = Object.fromEntries(Object.entries(claims(overrides)).filter(([, value]) => value !== undefined));
    return new SignJWT(payload).setProtectedHeader({ alg: 'EdDSA', kid: 'ticket-key', typ: 'ticket+jwt', ...header }).sign(key);
  }

  const door = () => new LockSimulator('door', jwks, ISSUER);

  beforeAll(async () => {
    const pair = await generateKeyPair('EdDSA', { extractable: true });
    privateKey = pair.privateKey;
    otherPrivateKey = (await generateKeyPair('EdDSA', { extractable: true })).privateKey;
    const ec = await generateKeyPair('ES256', { extractable: true });
    ecPrivateKey = ec.privateKey;
    const publicJwk: JWK = { ...(await exportJWK(pair.publicKey)), kid: 'ticket-key', alg: 'EdDSA', use: 'sig' };
    const ecJwk: JWK = { ...(await exportJWK(ec.publicKey)), kid: 'ec-key', alg: 'ES256', use: 'sig' };
    jwks = { keys: [publicJwk, ecJwk] };
  });

  it('opens for a valid credential within [beginDate, endDate)', async () => {
    const valid = await credential();
    expect(await door().decide(valid, 'open', AT)).toEqual({ decision: 'open', reason: 'valid', ticketId });
    expect(await door().decide(valid, 'clos', AT)).toEqual({ decision: 'open', reason: 'valid', ticketId });
    expect(await door().decide(valid, 'open', BEGIN)).toMatchObject({ decision: 'open' });
    expect(await door().decide(valid, 'open', END - 1)).toMatchObject({ decision: 'open' });
    // ES256 keys work the same way.
    const ec = await credential({}, { alg: 'ES256', kid: 'ec-key' }, ecPrivateKey);
    expect(await door().decide(ec, 'open', AT)).toEqual({ decision: 'open', reason: 'valid', ticketId });
  });

  it('denies a revoked ticket once a sync answer names it, and remembers the cursor', async () => {
    const lock = door();
    const valid = await credential();
    lock.apply({ tokens: [{ id: ticketId }], revocations: [], cursor: 'c1' });
    expect(await lock.decide(valid, 'open', AT)).toMatchObject({ decision: 'open' });
    lock.apply({ tokens: [], revocations: [{ tokenId: ticketId, revocationDate: AT }], cursor: 'c2' });
    expect(lock.cursor).toBe('c2');
    expect(lock.isRevoked(ticketId)).toBe(true);
    expect(await lock.decide(valid, 'open', AT)).toEqual({ decision: 'deny', reason: 'revoked', ticketId });
    // A later answer that lists the ticket again does not unrevoke it.
    lock.apply({ tokens: [{ id: ticketId }], revocations: [], cursor: 'c3' });
    expect(await lock.decide(valid, 'open', AT)).toEqual({ decision: 'deny', reason: 'revoked', ticketId });
  });

  it.each([
    ['expired', {}, END],
    ['expired', {}, END + HOUR],
    ['not yet valid', {}, BEGIN - 1],
    ['wrong lock', { aud: 'gate' }, AT],
    ['wrong issuer', { iss: 'http://elsewhere.test' }, AT],
  ] as const)('denies: %s', async (reason, overrides, at) => {
    expect(await door().decide(await credential(overrides), 'open', at)).toEqual({ decision: 'deny', reason, ticketId });
  });

  it('denies a command or a channel the ticket does not permit', async () => {
    const openOnly = await credential({ cmd: ['open'] });
    expect(await door().decide(openOnly, 'clos', AT)).toEqual({ decision: 'deny', reason: 'command not permitted', ticketId });
    expect(await door().decide(openOnly, 'tokn', AT)).toMatchObject({ reason: 'command not permitted' });
    expect(await door().decide(openOnly, 'open', AT, 'nfccard')).toEqual({ decision: 'deny', reason: 'channel not permitted', ticketId });
    expect(await door().decide(await credential({ chn: 'btlespp' }), 'open', AT)).toMatchObject({ reason: 'channel not permitted' });
  });

  it('denies a bad signature: tampered payload or signature, or another key under a known kid', async () => {
    const valid = await credential();
    const [header, payload, signature] = valid.split('.');
    const flipped = `${header}.${payload}.${signature!.startsWith('A') ? 'B' : 'A'}${signature!.slice(1)}`;
    const widened = Buffer.from(JSON.stringify(claims({ aud: 'door', endDate: END + 365 * 24 * HOUR }))).toString('base64url');
    for (const forged of [flipped, `${header}.${widened}.${signature}`, await credential({}, {}, otherPrivateKey)]) {
      expect(await door().decide(forged, 'open', AT)).toEqual({ decision: 'deny', reason: 'bad signature' });
    }
  });

  it('denies an unknown signing key: unknown or missing kid, an algorithm the key is not for, keys replaced', async () => {
    for (const forged of [
      await credential({}, { kid: 'someone-else' }, otherPrivateKey),
      await credential({}, { kid: undefined }),
      await credential({}, { alg: 'ES256', kid: 'ticket-key' }, ecPrivateKey),
    ]) {
      expect(await door().decide(forged, 'open', AT)).toEqual({ decision: 'deny', reason: 'unknown signing key' });
    }
    const lock = door();
    const valid = await credential();
    lock.replaceKeys({ keys: jwks.keys.filter((key) => key.kid !== 'ticket-key') });
    expect(await lock.decide(valid, 'open', AT)).toEqual({ decision: 'deny', reason: 'unknown signing key' });
  });

  it('denies what is not a ticket credential: an access token (typ at+jwt) or no typ', async () => {
    for (const header of [{ typ: 'at+jwt' }, { typ: 'JWT' }, { typ: undefined }]) {
      expect(await door().decide(await credential({}, header), 'open', AT)).toEqual({ decision: 'deny', reason: 'not a ticket credential' });
    }
  });

  it('denies a malformed credential', async () => {
    for (const garbage of ['', 'not-a-jws', 'a.b.c', `${Buffer.from('{').toString('base64url')}.e30.sig`]) {
      expect(await door().decide(garbage, 'open', AT)).toEqual({ decision: 'deny', reason: 'malformed credential' });
    }
    expect(await door().decide(await credential({ jti: undefined }), 'open', AT)).toEqual({ decision: 'deny', reason: 'malformed credential' });
    expect(await door().decide(await credential({ endDate: String(END) }), 'open', AT)).toEqual({
      decision: 'deny',
      reason: 'malformed credential',
      ticketId,
    });
  });

  it('syncs page after page from its cursor until the server has nothing more', async () => {
    const lock = door();
    const pages: SyncAnswer[] = [
      { tokens: [{ id: 'a' }], revocations: [], cursor: 'p1' },
      { tokens: [], revocations: [{ tokenId: 'a', revocationDate: AT }], cursor: 'p2' },
      { tokens: [{ id: 'b' }], revocations: [{ tokenId: 'c', revocationDate: AT }], cursor: 'p3' },
    ];
    const asked: (string | undefined)[] = [];
    await lock.sync(async (cursor) => {
      asked.push(cursor);
      const answer = pages[asked.length - 1]!;
      return { answer, more: asked.length < pages.length };
    });
    expect(asked).toEqual([undefined, 'p1', 'p2']);
    expect(lock.cursor).toBe('p3');
    expect(['a', 'b', 'c'].map((id) => lock.isRevoked(id))).toEqual([true, false, true]);
  });
});

// The build behind `npm run simulate` takes a while: the other runs go on meanwhile.
describe.concurrent('the simulator command line', () => {
  afterAll(async () => {
    await killAll();
  });

  it('npm run --silent simulate -- --help prints the usage and exits 0', async ({ expect }) => {
    // The npm script builds first (presimulate), as a user's run would.
    const child = spawn('npm', ['run', '--silent', 'simulate', '--', '--help'], {
      cwd: ROOT,
      env: childEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 170_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code, stderr).toBe(0);
    expect(stdout).toMatch(/^Usage: npm run --silent simulate -- --url URL --client-id ID --client-secret SECRET --secured-object ID/);
    expect(stdout).toContain('[CREDENTIAL ...]');
  }, 180_000);

  it('refuses to run without its required options, with the usage on stderr and exit 2', async ({ expect }) => {
    const child = spawnNode('src/simulator/cli.ts', ['--url', 'http://127.0.0.1:9']);
    const exit = await child.waitForExit(60_000);
    expect(exit.code).toBe(2);
    expect(child.stderr()).toMatch(/^Usage: /);
    expect(child.stdout()).toBe('');
  });

  describe('against a live server', () => {
    let t: TestApp;
    let base: string;

    beforeAll(async () => {
      const port = await freePort();
      base = `http://127.0.0.1:${port}`;
      t = await buildTestApp({ BCRYPT_COST: '4', PUBLIC_URL: base });
      await t.app.listen({ port, host: '127.0.0.1' });
    });
    afterAll(async () => {
      await t.close();
    });

    it('takes a client id and secret that start with a dash (base64url), as the usage shows them', async ({ expect }) => {
      const child = spawnNode('src/simulator/cli.ts', ['--url', base, '--client-id', '-not-a-client', '--client-secret', '-secret', '--secured-object', 'door', 'x']);
      const exit = await child.waitForExit(60_000);
      // Parsed, sent, and refused by the server: not a usage error.
      expect(child.stderr()).not.toMatch(/ambiguous|Usage/);
      expect(child.stderr()).toContain('token request failed: 401');
      expect(exit.code).toBe(1);
    }, 120_000);

    it('prints {"decision":"open"} for a downloaded credential, then "revoked" once the lock has synced the revocation', async ({ expect }) => {
      const acme = await createTenant(t.app, 'acme');
      const operator = await clientToken(t.app, acme);
      await lock(t, operator, 'door');
      await device(t, operator, 'phone');
      const issued = await ticket(t, operator, 'door', 'phone');
      const [downloaded] = await download(t, await phoneToken(t, acme, 'phone'), 'phone');
      const lockClient = await createClient(t.app, acme, ['sync'], { securedObjectId: 'door' });
      const simulate = async (command: string) => {
        const child = spawnNode('src/simulator/cli.ts', [
          '--url',
          base,
          '--client-id',
          lockClient.clientId,
          '--client-secret',
          lockClient.clientSecret,
          '--secured-object',
          'door',
          '--command',
          command,
          downloaded!.credential,
        ]);
        const exit = await child.waitForExit(60_000);
        expect(exit.code, child.stderr()).toBe(0);
        return child.stdout().trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
      };

      expect(await simulate('open')).toEqual([{ decision: 'open', reason: 'valid', ticketId: issued.id }]);
      expect(await simulate('clos')).toEqual([{ decision: 'deny', reason: 'command not permitted', ticketId: issued.id }]);
      expect((await call(t, operator, { method: 'DELETE', url: `/operatorapi/tickets/${issued.id}` })).statusCode).toBe(200);
      expect(await simulate('open')).toEqual([{ decision: 'deny', reason: 'revoked', ticketId: issued.id }]);
    }, 120_000);
  });
});
