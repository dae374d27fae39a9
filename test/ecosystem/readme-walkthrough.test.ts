// The README's guided tour, run as written: its marked shell blocks, in order, as one bash script against a live
// server on a free port with a fresh DATA_DIR. A command that drifts from the service fails here, not for a reader.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isProcessAlive } from '../../src/db/pglite.js';
import { postgresTestUrl } from '../helpers/postgres-url.js';
import { PATIENCE_MS, ROOT, childEnv, freePort, temporaryDirectory } from '../helpers/process.js';

const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const TOUR_HEADING = '## A guided tour';
// Generous: the tour took 271-297 s at load 21-28 on 2 cores while every CLI run compiled first, 195-203 s since.
const RUN_MS = 540_000;
const STOP_MS = PATIENCE_MS;
const usePostgres = postgresTestUrl() !== undefined;

/** The tour's tools a machine lacks: the README asks the reader for them, so their absence skips the run and says so. */
const missingTools = ['bash', 'curl', 'jq'].filter((tool) => {
  try {
    execFileSync(tool, ['--version'], { stdio: 'ignore' });
    return false;
  } catch {
    return true;
  }
});
const skipReason = usePostgres
  ? 'skipped: TEST_DATABASE_URL is set, and the tour runs on the default embedded database'
  : missingTools.length > 0
    ? `skipped: ${missingTools.join(', ')} not found on PATH`
    : undefined;

/** The README section holding the tour: from its heading to the next second-level heading. */
function tourSection(markdown: string): string {
  const start = markdown.indexOf(`\n${TOUR_HEADING}\n`);
  if (start < 0) throw new Error(`README.md has no "${TOUR_HEADING}" section`);
  const end = markdown.indexOf('\n## ', start + 1);
  return markdown.slice(start, end < 0 ? undefined : end);
}

/** The bodies of the ```sh blocks preceded by `<!-- walkthrough -->`, in README order. */
function walkthroughBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^<!-- walkthrough -->\n```sh\n([\s\S]*?)^```$/gm)].map((match) => match[1]!);
}

/**
 * The blocks as one script. The prologue is what a reader's interactive terminal has and a script lacks: job
 * control, so that `npm start &` runs as its own process group and `kill %1` stops all of it (npm, sh, node).
 * Each block is announced on stderr, so a failure names its block.
 */
function walkthroughScript(blocks: string[]): string {
  const prologue = [
    'set -euo pipefail',
    'set -m',
    // A failed step must not leave the background server running.
    `trap 'status=$?; if [ "$status" -ne 0 ]; then for job in $(jobs -p); do kill -- "-$job" 2>/dev/null || true; done; fi' EXIT`,
  ];
  const steps = blocks.map((block, index) => `echo '--- README walkthrough block ${index + 1} of ${blocks.length} ---' >&2\n${block}`);
  return `${[...prologue, ...steps].join('\n')}\n`;
}

/** Every process below `pid`, found through `ps`: under job control the tour's processes sit in groups of their own. */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const line of execFileSync('ps', ['-A', '-o', 'pid=,ppid='], { encoding: 'utf8' }).trim().split('\n')) {
    const [child, parent] = line.trim().split(/\s+/).map(Number) as [number, number];
    children.set(parent, [...(children.get(parent) ?? []), child]);
  }
  const found: number[] = [];
  for (let queue = [pid]; queue.length > 0; ) {
    for (const child of children.get(queue.shift()!) ?? []) {
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the README walkthrough blocks', () => {
  const blocks = walkthroughBlocks(README);
  const script = walkthroughScript(blocks);

  it('mark every shell block of the tour, so none is skipped unnoticed', () => {
    const section = tourSection(README);
    expect(blocks.length).toBeGreaterThanOrEqual(10);
    expect(section.match(/^```sh$/gm)?.length).toBe(blocks.length);
    expect(walkthroughBlocks(section)).toEqual(blocks);
  });

  it('hold the key requests of the tour', () => {
    for (const step of [
      'npm run --silent cli -- tenant create acme --json',
      'npm start &',
      '/readyz',
      '-d grant_type=client_credentials "$BASE/oauth/token"',
      '"$BASE/operatorapi/securedobjects"',
      '"$BASE/operatorapi/mobiledevices"',
      "-H 'Idempotency-Key: ticket-1'",
      '"$BASE/operatorapi/tickets?mobileDeviceId=phone-1&status=VALID"',
      '-X DELETE "$BASE/operatorapi/tickets/$TICKET_ID"',
      '"$BASE/operatorapi/oauthclients"',
      '"$BASE/operatorapi/users"',
      '-d grant_type=password',
      '"$BASE/oauth2/token"',
      '"$BASE/v1/residents"',
      '"$BASE/v1/lock-groups"',
      '"$BASE/v1/access-permissions"',
      '"scopes":["tokens:download"],"mobileDeviceId":"phone-1"',
      '"$BASE/deviceapi/mobiledevices/phone-1/tickets"',
      '"scopes":["sync","keys:register"],"securedObjectId":"front-door"',
      '--register-key',
      '--present front-door',
      '"$BASE/deviceapi/securedobjects/front-door/trust"',
      '"$BASE/deviceapi/securedobjects/front-door/sync?cursor=$CURSOR"',
      'npm run --silent simulate --',
      '-X DELETE "$BASE/v1/residents/$RESIDENT_ID/mobiledevices/phone-1"',
      'kill %1',
    ]) {
      expect(script).toContain(step);
    }
  });

  describe.skipIf(skipReason !== undefined)(
    `against a live server on the embedded database${skipReason ? ` (${skipReason})` : ''}`,
    () => {
      // Made in the test, not here: a skipped suite's body still runs, its afterAll does not.
      let directory: { path: string; remove(): void } | undefined;
      let bashPid: number | undefined;

      /** The server the tour started, if it still holds DATA_DIR (its lock file holds its pid). */
      const serverPid = (): number | undefined => {
        const lockFile = directory && join(directory.path, 'data', 'server.lock');
        if (!lockFile || !existsSync(lockFile)) return undefined;
        const pid = Number.parseInt(readFileSync(lockFile, 'utf8'), 10);
        return Number.isInteger(pid) && pid > 0 && isProcessAlive(pid) ? pid : undefined;
      };

      afterAll(async () => {
        // Whatever happened, nothing the tour started outlives this file.
        const leftovers = [...(bashPid !== undefined && isProcessAlive(bashPid) ? [bashPid, ...descendants(bashPid)] : []), serverPid()];
        for (const pid of leftovers) {
          try {
            if (pid !== undefined) process.kill(pid, 'SIGKILL');
          } catch {
            // Gone meanwhile.
          }
        }
        directory?.remove();
      });

      it('runs every block in order, opens with the phone credential, then denies it once revoked', async () => {
        directory = temporaryDirectory('acs-walkthrough-');
        const port = await freePort();
        const base = `http://localhost:${port}`;
        const scriptFile = join(directory.path, 'walkthrough.sh');
        writeFileSync(scriptFile, script);
        // What a reader's terminal would hold; this node and its npm first on PATH.
        const env = childEnv({
          PORT: String(port),
          HOST: '127.0.0.1',
          DATA_DIR: join(directory.path, 'data'),
          PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`,
        });
        const child = spawn('bash', [scriptFile], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
        bashPid = child.pid;
        let stdout = '';
        let output = '';
        child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
          stdout += chunk;
          output += chunk;
        });
        child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
        const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
        let timer: NodeJS.Timeout | undefined;
        const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), RUN_MS)));
        const code = await Promise.race([exited, timedOut]).finally(() => clearTimeout(timer));
        if (code !== 0) {
          throw new Error(`the README walkthrough ${code === 'timeout' ? `did not finish within ${RUN_MS} ms` : `exited with ${code}`}:\n${output}`);
        }

        // `kill %1` stopped the server: it released DATA_DIR (where the tour's database is), last thing on a clean shutdown.
        expect(existsSync(join(directory.path, 'data', 'pgdata')), 'the tour ran on the DATA_DIR it was given').toBe(true);
        for (const deadline = Date.now() + STOP_MS; serverPid() !== undefined && Date.now() < deadline; ) await sleep(200);
        expect(serverPid(), `the server outlived kill %1:\n${output}`).toBeUndefined();
        await expect(fetch(`${base}/healthz`)).rejects.toThrow();

        const lines = stdout.split('\n');
        const expectLine = (pattern: RegExp) => {
          const index = lines.findIndex((line) => pattern.test(line));
          expect(index, `no output line matches ${pattern}:\n${output}`).toBeGreaterThanOrEqual(0);
          return pattern.exec(lines[index]!)!;
        };
        expectLine(/^\{"tenant":"acme","clientId":"[\w-]+","clientSecret":"[\w-]+","consoleClientId":"console-[\w-]+"\}$/);
        expectLine(/^\{"status":"ready"\}$/);
        expectLine(/^\{"token_type":"Bearer","expires_in":3600,"scope":"tokens:create .*clients:manage users:manage audit:read events:read webhooks:manage settings:manage"\}$/);
        expectLine(/^\{"id":"front-door","channels":\["btlespp"\],"urls":\["btlespp:\/\/LOCK-0042\/7d8a0c1e-4b7f-4d5e-9a41-3c2b1f0e9d8c"\]/);
        // The retry with the same Idempotency-Key answered the same ticket.
        const [, ticketId] = expectLine(/^([0-9a-f-]{36})$/);
        expect(lines.filter((line) => line === ticketId)).toHaveLength(2);
        expectLine(new RegExp(`^\\{"id":"${ticketId}","securedObjectId":"front-door","status":"VALID"\\}$`));
        expectLine(/^\{"status":"REVOKED","revocationDate":\d+\}$/);
        expect(stdout).toContain('ticket.created\nticket.revoked\n');
        expectLine(/^\{"username":"alice"\}$/);
        expectLine(/^\{"expires_in":3600,"scope":"offline .*","refresh":"string"\}$/);
        expectLine(/^\{"tokenCount":2\}$/);
        expect(lines.filter((line) => /^\{"mobileDeviceId":"phone-1","securedObjectId":"(front-door|garage)","status":"VALID"\}$/.test(line))).toHaveLength(2);
        expect(lines.filter((line) => /^\{"securedObjectId":"(front-door|garage)","status":"VALID","downloaded":true\}$/.test(line))).toHaveLength(2);
        expectLine(/^\{"alg":"(EdDSA|ES256)","kid":"[^"]+","typ":"ticket\+jwt"\}$/);
        const [, credentialTicket, nbf, exp, iat] = expectLine(
          /^\{"iss":"http:\/\/[^"]+\/tenants\/acme","jti":"([0-9a-f-]{36})","sub":"phone-1","aud":"front-door","nbf":(\d+),"exp":(\d+),"iat":(\d+),"beginDate":0,"endDate":4102444800000,/,
        );
        // docs/api-reference.md 6.4: a ticket that began long ago gives a credential that starts at its signature less the
        // skew, not at 0, so a lock whose clock was reset accepts no long-expired credential.
        expect(Number(iat) - Number(nbf)).toBe(300);
        // docs/api-reference.md 8.2: a week at most, however long the ticket runs.
        expect(Number(exp) - Number(iat)).toBe(604800);
        const [, kid] = expectLine(/^\{"issuer":"http:\/\/[^"]+\/tenants\/acme","securedObjectId":"front-door","keys":\["([^"]+)"\],"maxCredentialLifetime":604800\}$/);
        // The first sync carries the Access API ticket and the key set; the Operator API ticket revoked before any
        // download needs no revocation at the lock (docs/api-reference.md 8.2). The next sync: nothing.
        const [, cursor] = expectLine(
          new RegExp(`^\\{"tokens":\\[\\{"mobileDeviceId":"phone-1","accessPermissionId":"[^"]+"\\}\\],"revocations":\\[\\],"keys":\\["${kid}"\\],"cursor":"([^"]+)"\\}$`),
        );
        expect(stdout).not.toContain(`"revocations":["${ticketId}"]`);
        expectLine(new RegExp(`^\\{"tokens":\\[\\],"revocations":\\[\\],"cursor":"${cursor}","serial":\\d+,"holderBinding":"optional","revokedKeys":\\[\\]\\}$`));
        expectLine(new RegExp(`^\\{"decision":"open","reason":"ok","ticketId":"${credentialTicket}"\\}$`));
        expectLine(/^\[\]$/);
        expectLine(new RegExp(`^\\{"tokens":\\[\\],"revocations":\\["${credentialTicket}"\\]\\}$`));
        const denied = lines.indexOf(expectLine(new RegExp(`^\\{"decision":"deny","reason":"revoked","ticketId":"${credentialTicket}"\\}$`))[0]);
        expect(lines[denied + 1], 'the phone downloads no ticket any more').toBe('0');
        // The enrolled phone, then the lock with its own key (docs/lock-integration.md 4): its credentials are bound, it
        // opens with a proof over the lock's nonce, and the same credential without the proof is refused.
        const enrolled = lines.indexOf('{"tokens":2,"bound":true}');
        expect(enrolled, `the enrolled phone's download is bound:\n${output}`).toBeGreaterThan(denied);
        const registered = lines.indexOf('{"securedObjectId":"front-door"}');
        expect(registered, `the lock registered its key after the enrolment:\n${output}`).toBeGreaterThan(enrolled);
        expect(lines.slice(registered + 1, registered + 4)).toEqual(['{"tokens":2,"bound":true}', '{"decision":"open","reason":"ok"}', '{"decision":"deny","reason":"bad-proof"}']);
      }, RUN_MS + STOP_MS + 30_000);
    },
  );
});
