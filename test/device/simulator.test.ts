// The lock simulator's command line (src/simulator/cli.ts): `npm run simulate -- --help`, usage errors (a clock that
// is not an integer of milliseconds among them), and runs against a live server: provisioned from the trust endpoint
// (docs/api-reference.md 8.1), it opens, then denies once revoked, and never opens for another tenant's credential
// (docs/security-cases.md G39). LockSimulator itself is proven in test/unit/simulator/lock-simulator.test.ts.
import { spawn } from 'node:child_process';
import { CompactSign, generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, it, type ExpectStatic } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { download, phoneToken, type DownloadedTicket } from '../helpers/device.js';
import { createClient } from '../helpers/oauth.js';
import { call, ticket } from '../helpers/operator.js';
import { PATIENCE_MS, ROOT, childEnv, freePort, killAll, spawnNode } from '../helpers/process.js';
import { twoTenants, type TwoTenants } from '../helpers/tenants.js';

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
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    expect(code, stderr).toBe(0);
    expect(stdout).toMatch(/^Usage: npm run --silent simulate -- --url URL --client-id ID --client-secret SECRET --secured-object ID/);
    expect(stdout).toContain('[CREDENTIAL ...]');
  });

  it('refuses to run without its required options, with the usage on stderr and exit 2', async ({ expect }) => {
    const child = spawnNode('src/simulator/cli.ts', ['--url', 'http://127.0.0.1:9']);
    const exit = await child.waitForExit(PATIENCE_MS);
    expect(exit.code).toBe(2);
    expect(child.stderr()).toMatch(/^Usage: /);
    expect(child.stdout()).toBe('');
  });

  // Number('now') is NaN, and a lock comparing NaN with a credential's dates used to open: the clock is checked
  // before anything is fetched, so these fail without a server (port 9 answers nothing).
  it.for(['now', '1e3x', '', '-5', '1.5', '99999999999999999999'])(
    '--at %j is a usage error: exit 2, no decision printed',
    async (at, { expect }) => {
      const child = spawnNode('src/simulator/cli.ts', ['--url', 'http://127.0.0.1:9', '--client-id', 'c', '--client-secret', 's', '--secured-object', 'door', '--at', at, 'x.y.z']);
      const exit = await child.waitForExit(PATIENCE_MS);
      expect(exit.code, child.stderr()).toBe(2);
      expect(child.stderr()).toContain('--at must be an integer of milliseconds');
      expect(child.stdout()).toBe('');
    },
  );

  it('an option without its value is a usage error too', async ({ expect }) => {
    const child = spawnNode('src/simulator/cli.ts', ['--url', 'http://127.0.0.1:9', '--client-id', 'c', '--client-secret', 's', '--secured-object', 'door', '--at']);
    const exit = await child.waitForExit(PATIENCE_MS);
    expect(exit.code).toBe(2);
    expect(child.stderr()).toMatch(/Usage: /);
    expect(child.stdout()).toBe('');
  });

  describe('against a live server', () => {
    let t: TestApp;
    let base: string;
    let fixture: TwoTenants;
    let lockClient: { clientId: string; clientSecret: string };

    beforeAll(async () => {
      const port = await freePort();
      base = `http://127.0.0.1:${port}`;
      t = await buildTestApp({ BCRYPT_COST: '4', PUBLIC_URL: base });
      await t.app.listen({ port, host: '127.0.0.1' });
      // Both tenants have a lock "door" and a phone "phone": the cross-tenant attack of docs/security-cases.md G39.
      fixture = await twoTenants(t, { acme: { locks: ['door'], devices: ['phone', 'walker'] }, other: { locks: ['door'], devices: ['phone'] } });
      lockClient = await createClient(t.app, fixture.acme, ['sync'], { securedObjectId: 'door' });
    });
    afterAll(async () => {
      await t.close();
    });

    /** Runs the simulator as acme's lock "door" and answers its decisions (stdout, one JSON line each) and stderr. */
    async function simulate(args: string[], credentials: string[], expect: ExpectStatic) {
      const child = spawnNode('src/simulator/cli.ts', [
        '--url',
        base,
        '--client-id',
        lockClient.clientId,
        '--client-secret',
        lockClient.clientSecret,
        '--secured-object',
        'door',
        ...args,
        ...credentials,
      ]);
      const exit = await child.waitForExit(PATIENCE_MS);
      expect(exit.code, child.stderr()).toBe(0);
      const decisions = child.stdout().trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
      return { decisions, stderr: child.stderr() };
    }

    it('takes a client id and secret that start with a dash (base64url), as the usage shows them', async ({ expect }) => {
      const child = spawnNode('src/simulator/cli.ts', ['--url', base, '--client-id', '-not-a-client', '--client-secret', '-secret', '--secured-object', 'door', 'x']);
      const exit = await child.waitForExit(PATIENCE_MS);
      // Parsed, sent, and refused by the server: not a usage error.
      expect(child.stderr()).not.toMatch(/ambiguous|Usage/);
      expect(child.stderr()).toContain('token request failed: 401');
      expect(exit.code).toBe(1);
    });

    it("opens for its tenant's credential, never for another tenant's for the same lock id, and denies once revoked", async ({ expect }) => {
      const { acme, other, token: operator, otherToken } = fixture;
      // Begun a minute ago: a credential's nbf is its beginDate rounded up to the second (docs/api-reference.md 8.2), and the
      // simulator may decide within the same second the ticket was issued.
      const begun = { beginDate: t.app.services.clock() - 60_000 };
      const issued = await ticket(t, operator, 'door', 'phone', begun);
      await ticket(t, otherToken, 'door', 'phone', begun);
      const [ours] = await download(t, await phoneToken(t, acme, 'phone'), 'phone');
      const [theirs] = await download(t, await phoneToken(t, other, 'phone'), 'phone');

      // The other tenant's credential names the same lock id, under its own issuer and key; the lock holds only its
      // tenant's key set (the trust answer, docs/api-reference.md 8.1), so it does not even know that key.
      expect((await simulate(['--command', 'open'], [ours!.credential, theirs!.credential], expect)).decisions).toEqual([
        { decision: 'open', reason: 'ok', ticketId: issued.id },
        { decision: 'deny', reason: 'unknown-key' },
      ]);
      expect((await simulate(['--command', 'clos'], [ours!.credential], expect)).decisions).toEqual([{ decision: 'deny', reason: 'command-not-granted', ticketId: issued.id }]);
      // An explicit clock: before the ticket begins, then inside it.
      expect((await simulate(['--at', String((issued.beginDate as number) - 1)], [ours!.credential], expect)).decisions).toEqual([
        { decision: 'deny', reason: 'not-yet-valid', ticketId: issued.id },
      ]);
      expect((await simulate(['--at', String((issued.beginDate as number) + 1000)], [ours!.credential], expect)).decisions).toEqual([
        { decision: 'open', reason: 'ok', ticketId: issued.id },
      ]);

      expect((await call(t, operator, { method: 'DELETE', url: `/operatorapi/tickets/${issued.id}` })).statusCode).toBe(200);
      expect((await simulate([], [ours!.credential], expect)).decisions).toEqual([{ decision: 'deny', reason: 'revoked', ticketId: issued.id }]);
    });

    it('applies every --revocation-list after the sync, says what became of each on stderr, and prints decisions only', async ({ expect }) => {
      // The list a phone carries for the door: the sync already brought the lock that far, so it is stale there.
      await ticket(t, fixture.token, 'door', 'walker');
      const [carried] = (await download(t, await phoneToken(t, fixture.acme, 'walker'), 'walker')) as (DownloadedTicket & { revocationList?: string })[];
      expect(carried!.revocationList).toEqual(expect.any(String));
      // A list signed by a key the lock does not hold, and one that is not a JWS: both ignored (docs/api-reference.md 8.3).
      const { privateKey } = await generateKeyPair('EdDSA');
      const payload = { iss: `${base}/tenants/acme`, aud: 'door', serial: Number.MAX_SAFE_INTEGER, iat: 0, revoked: [] };
      const forged = await new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
        .setProtectedHeader({ alg: 'EdDSA', kid: 'forged', typ: 'revocation-list+jwt' })
        .sign(privateKey);
      const lists = ['--revocation-list', carried!.revocationList!, '--revocation-list', forged, '--revocation-list', 'not-a-list'];
      const { decisions, stderr } = await simulate(lists, ['not-a-credential'], expect);
      expect(decisions).toEqual([{ decision: 'deny', reason: 'malformed' }]);
      expect(stderr.trim().split('\n')).toEqual([
        'revocation list: {"applied":false,"reason":"stale"}',
        'revocation list: {"applied":false,"reason":"unknown-key"}',
        'revocation list: {"applied":false,"reason":"malformed"}',
      ]);
    });

    it('uploads its access log after deciding with --upload-log (docs/api-reference.md 8.5): the server\'s answer on stderr, a re-sent log stored once', async ({ expect }) => {
      const at = Date.UTC(2026, 0, 15, 9, 0, 0, 0);
      const first = await simulate(['--upload-log', '--at', String(at)], ['not-a-credential', 'x.y.z'], expect);
      expect(first.decisions).toEqual([
        { decision: 'deny', reason: 'malformed' },
        { decision: 'deny', reason: 'malformed' },
      ]);
      expect(first.stderr.trim().split('\n')).toEqual(['access log: {"accepted":2,"duplicates":0,"gaps":[]}']);
      // A lock whose acknowledgement was lost sends the same entries again: nothing is stored twice.
      const again = await simulate(['--upload-log', '--at', String(at)], ['not-a-credential', 'x.y.z'], expect);
      expect(again.stderr.trim().split('\n')).toEqual(['access log: {"accepted":0,"duplicates":2,"gaps":[]}']);
      const { rows } = await t.database.db.query<{ entry_no: number; lock_time: number; via: string; result: string }>(
        'SELECT entry_no, lock_time, via, result FROM access_log_entries WHERE tenant_id = $1 AND secured_object_id = $2 ORDER BY entry_no',
        [fixture.acme.tenantId, 'door'],
      );
      expect(rows.map((row) => [Number(row.entry_no), Number(row.lock_time), row.via, row.result])).toEqual([
        [1, at, 'lock', 'denied'],
        [2, at, 'lock', 'denied'],
      ]);
    });
  });
});
