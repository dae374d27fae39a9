// The reference phone and lock with keys on the command line (src/simulator/cli.ts, docs/lock-integration.md 4): a phone
// enrolled from a claim link and kept in a file, a lock key kept in a file and registered, the lock's hello, the phone's
// presentation and the lock's decision; refusals of a hello the phone cannot trust, of a credential without its proof,
// of a lock whose registered key is another, and the usage errors of the new options.
import { statSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HELLO_TYPE } from '../../src/shared/door-exchange.js';
import { es256KeyPair, signEs256 } from '../../src/simulator/es256.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { bearer, clientToken, createClient, createTenant, type ClientFixture, type TenantFixture } from '../helpers/oauth.js';
import { device, lock, ticket } from '../helpers/operator.js';
import { PATIENCE_MS, freePort, killAll, spawnNode, temporaryDirectory } from '../helpers/process.js';

async function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawnNode('src/simulator/cli.ts', args);
  const exit = await child.waitForExit(PATIENCE_MS);
  return { code: exit.code, stdout: child.stdout(), stderr: child.stderr() };
}

const json = (text: string) => JSON.parse(text.trim()) as Record<string, unknown>;

describe('the simulator command line with keys', () => {
  afterAll(async () => {
    await killAll();
  });

  describe.concurrent('usage errors (exit 2, the usage on stderr, nothing on stdout)', () => {
    const cases: [string, string[], RegExp][] = [
      ['--present without --phone', ['--present', 'door', 'x.y.z'], /--phone FILE/],
      ['--download without --phone', ['--download'], /--phone FILE/],
      ['--download with --present', ['--phone', 'p.json', '--download', '--present', 'door', 'x.y.z'], /give one/],
      ['--present without its hello', ['--phone', 'p.json', '--present', 'door'], /exactly one HELLO/],
      ['--phone alone', ['--phone', 'p.json'], /goes with --enrol, --download or --present/],
      ['--hello without --lock-key', ['--url', 'http://127.0.0.1:9', '--client-id', 'c', '--client-secret', 's', '--secured-object', 'door', '--hello'], /--lock-key FILE/],
      [
        '--register-key with --hello',
        ['--url', 'http://127.0.0.1:9', '--client-id', 'c', '--client-secret', 's', '--secured-object', 'door', '--lock-key', 'k.json', '--register-key', '--hello'],
        /give one/,
      ],
      [
        '--hello with a credential',
        ['--url', 'http://127.0.0.1:9', '--client-id', 'c', '--client-secret', 's', '--secured-object', 'door', '--lock-key', 'k.json', '--hello', 'x.y.z'],
        /decide on no credential/,
      ],
    ];
    for (const [name, args, message] of cases) {
      it(name, async ({ expect }) => {
        const { code, stdout, stderr } = await run(args);
        expect(code).toBe(2);
        expect(stderr).toMatch(message);
        expect(stderr).toMatch(/Usage: /);
        expect(stdout).toBe('');
      });
    }
  });

  describe('against a live server', () => {
    let t: TestApp;
    let base: string;
    let tenant: TenantFixture;
    let lockClient: ClientFixture;
    let kept: { path: string; remove(): void };
    let issuedId: string;

    beforeAll(async () => {
      const port = await freePort();
      base = `http://127.0.0.1:${port}`;
      t = await buildTestApp({ BCRYPT_COST: '4', PUBLIC_URL: base });
      await t.app.listen({ port, host: '127.0.0.1' });
      tenant = await createTenant(t.app, 'acme');
      const operator = await clientToken(t.app, tenant);
      await lock(t, operator, 'door');
      await device(t, operator, 'phone');
      // Begun a minute ago: a credential's nbf is its beginDate rounded up to the second (docs/api-reference.md 8.2).
      issuedId = (await ticket(t, operator, 'door', 'phone', { beginDate: t.app.services.clock() - 60_000 })).id as string;
      lockClient = await createClient(t.app, tenant, ['sync', 'keys:register'], { securedObjectId: 'door' });
      kept = temporaryDirectory('acs-simulator-keys-');
    });
    afterAll(async () => {
      kept?.remove();
      await t.close();
    });

    const lockArgs = () => ['--url', base, '--client-id', lockClient.clientId, '--client-secret', lockClient.clientSecret, '--secured-object', 'door'];

    it('enrols and keeps the phone, registers the lock key, and opens only with the proof over the hello the lock gave', async () => {
      const operator = await clientToken(t.app, tenant);
      const claim = await t.app.inject({ method: 'POST', url: '/operatorapi/claims', headers: bearer(operator), payload: { mobileDeviceId: 'phone', expiresIn: 3600 } });
      expect(claim.statusCode, claim.body).toBe(201);
      const phoneFile = join(kept.path, 'phone.json');
      const lockKeyFile = join(kept.path, 'lock-key.json');

      const enrolled = await run(['--enrol', claim.json().url as string, '--phone', phoneFile]);
      expect(enrolled.code, enrolled.stderr).toBe(0);
      expect(json(enrolled.stdout)).toMatchObject({ mobileDeviceId: 'phone', tokens: 1, bound: true });
      // The file holds the phone's private key: its owner's only.
      expect(statSync(phoneFile).mode & 0o777).toBe(0o600);
      const saved = json(readFileSync(phoneFile, 'utf8'));
      expect(saved).toMatchObject({ version: 1, key: { kty: 'EC', crv: 'P-256', d: expect.any(String) }, enrolment: { mobileDeviceId: 'phone' } });

      // The lock has no key yet: the phone cannot tell it from another, so it shows nothing.
      const unknownLock = await run(['--phone', phoneFile, '--present', 'door', 'x.y.z']);
      expect(unknownLock.code).toBe(1);
      expect(json(unknownLock.stdout)).toEqual({ refused: 'no-lock-key' });

      const registered = await run([...lockArgs(), '--lock-key', lockKeyFile, '--register-key']);
      expect(registered.code, registered.stderr).toBe(0);
      expect(statSync(lockKeyFile).mode & 0o777).toBe(0o600);
      const lockKey = es256KeyPair(json(readFileSync(lockKeyFile, 'utf8')));
      expect(json(registered.stdout)).toEqual({ securedObjectId: 'door', keyThumbprint: lockKey.thumbprint, keyRegisteredTime: expect.any(Number) });
      const { rows } = await t.database.db.query<{ key_thumbprint: string }>('SELECT key_thumbprint FROM secured_objects WHERE tenant_id = $1 AND id = $2', [tenant.tenantId, 'door']);
      expect(rows[0]?.key_thumbprint).toBe(lockKey.thumbprint);

      const downloaded = await run(['--phone', phoneFile, '--download']);
      expect(downloaded.code, downloaded.stderr).toBe(0);
      expect(json(downloaded.stdout)).toEqual({ tokens: 1, bound: true });

      const hello = json((await run([...lockArgs(), '--lock-key', lockKeyFile, '--hello'])).stdout) as { hello: string; nonce: string };
      expect(hello.nonce).toMatch(/^[\w-]{43}$/);
      const presented = await run(['--phone', phoneFile, '--present', 'door', hello.hello]);
      expect(presented.code, presented.stderr).toBe(0);
      const presentation = json(presented.stdout) as { tokenId: string; credential: string; proof: string; revocationList?: string };
      expect(presentation).toMatchObject({ tokenId: issuedId, proof: expect.any(String), revocationList: expect.any(String) });

      const decide = async (nonce: string, proof?: string) =>
        json((await run([...lockArgs(), '--lock-key', lockKeyFile, '--nonce', nonce, ...(proof ? ['--proof', proof] : []), presentation.credential])).stdout);
      expect(await decide(hello.nonce, presentation.proof)).toEqual({ decision: 'open', reason: 'ok', ticketId: issuedId });
      // A copy of the credential has no proof to show; the proof of one hello answers no other.
      expect(await decide(hello.nonce)).toEqual({ decision: 'deny', reason: 'bad-proof', ticketId: issuedId });
      const next = json((await run([...lockArgs(), '--lock-key', lockKeyFile, '--hello'])).stdout) as { nonce: string };
      expect(await decide(next.nonce, presentation.proof)).toEqual({ decision: 'deny', reason: 'wrong-nonce', ticketId: issuedId });
    });

    it('the phone refuses a hello signed by another key, and a lock with another key than the registered one refuses to start', async () => {
      const phoneFile = join(kept.path, 'phone.json');
      const impostor = es256KeyPair();
      const forged = signEs256(impostor.privateKey, { typ: HELLO_TYPE }, { iss: `${base}/tenants/acme`, sub: 'door', nonce: 'A'.repeat(43), serial: 0, iat: Math.floor(Date.now() / 1000) });
      const refused = await run(['--phone', phoneFile, '--present', 'door', forged]);
      expect(refused.code).toBe(1);
      expect(json(refused.stdout)).toEqual({ refused: 'bad-signature' });

      const otherKeyFile = join(kept.path, 'other-lock-key.json');
      const started = await run([...lockArgs(), '--lock-key', otherKeyFile, '--hello']);
      expect(started.code).toBe(1);
      expect(started.stderr).toContain('the service holds another key for this lock');
      expect(started.stdout).toBe('');
      // Registering it is refused too: only an operator removes the lock's key (docs/api-reference.md 11.1).
      const swapped = await run([...lockArgs(), '--lock-key', otherKeyFile, '--register-key']);
      expect(swapped.code).toBe(1);
      expect(swapped.stderr).toMatch(/key registration failed: 409/);
    });

    it('never enrols into a file that already holds a phone, and reads no phone from a file that is not one', async () => {
      const phoneFile = join(kept.path, 'phone.json');
      const before = readFileSync(phoneFile, 'utf8');
      const again = await run(['--enrol', `${base}/claim#not-a-code`, '--phone', phoneFile]);
      expect(again.code).toBe(1);
      expect(again.stderr).toContain('already holds a phone');
      expect(readFileSync(phoneFile, 'utf8')).toBe(before);

      const notAPhone = join(kept.path, 'not-a-phone.json');
      writeFileSync(notAPhone, '{"version":1,"tokens":[]}\n');
      const broken = await run(['--phone', notAPhone, '--download']);
      expect(broken.code).toBe(1);
      expect(broken.stderr).toContain('a saved phone holds its private key');
    });
  });
});
