// The lock simulator's command line deciding the exchange at the door (src/simulator/cli.ts, docs/lock-integration.md 4):
// `--nonce NONCE --proof PROOF CREDENTIAL` decides as a lock that sent NONCE in its hello. The lock is provisioned from
// a stand-in service that answers the trust and sync of cases of docs/test-vectors/door.json, so the command line is
// held to the same vectors as the reference lock; and its usage errors, which need no service at all.
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PATIENCE_MS, killAll, spawnNode } from '../helpers/process.js';
import type { DoorVectors, VectorCase } from '../../scripts/door-vector-shape.js';

const vectors = JSON.parse(readFileSync(new URL('../../docs/test-vectors/door.json', import.meta.url), 'utf8')) as DoorVectors;

/**
 * One case per reason that a lock provisioned and synced over the network can show: no lockdown, no lock state handed
 * over by a phone (the command line takes none), no used nonce yet.
 */
const chosen = [
  ...new Map(
    vectors.cases
      .filter((vector) => !vector.lock.lockdown && vector.lock.lockState === undefined && !vector.lock.nonceUsed)
      .map((vector) => [vector.expect.reason, vector] as const),
  ).values(),
];

describe('the simulator command line at the door', () => {
  let server: Server;
  let base: string;
  let current: VectorCase;

  beforeAll(async () => {
    // The service as the lock's bound client sees it (docs/api-reference.md 8.1, 6.2), answering for the current case.
    server = createServer((request, response) => {
      const state = current.lock;
      const send = (body: unknown) => response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (request.method === 'POST' && request.url === '/oauth/token') return send({ access_token: 'token', token_type: 'Bearer', expires_in: 3600, scope: 'sync' });
      if (request.url === `/deviceapi/securedobjects/${state.id}/trust`) {
        return send({ issuer: state.issuer, securedObjectId: state.id, keys: state.keys, maxCredentialLifetime: 604_800, holderBinding: state.holderBinding, serial: state.serial });
      }
      if (request.url === `/deviceapi/securedobjects/${state.id}/sync`) {
        return send({
          tokens: [],
          revocations: state.revoked.map((tokenId) => ({ tokenId, revocationDate: state.now })),
          revokedKeys: state.revokedKeys.map((jkt) => ({ jkt, revocationDate: state.now })),
          cursor: 'c1',
          serial: state.serial,
          holderBinding: state.holderBinding,
          ...(state.decommissioned ? { decommissioned: true } : {}),
        });
      }
      response.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await killAll();
    await new Promise((resolve) => server.close(resolve));
  });

  const options = (lockId: string) => ['--url', base, '--client-id', 'lock', '--client-secret', 'secret', '--secured-object', lockId];

  it('the chosen cases span the exchange and the credential rules', () => {
    const reasons = chosen.map((vector) => vector.expect.reason);
    for (const reason of ['ok', 'key-mismatch', 'bad-proof', 'wrong-nonce', 'wrong-lock', 'credential-mismatch', 'key-revoked', 'binding-required', 'revoked', 'decommissioned']) {
      expect(reasons).toContain(reason);
    }
  });

  // One at a time: the stand-in service answers for the current case.
  for (const vector of chosen) {
    it(`prints the vector's decision and reason: ${vector.name}`, async () => {
      current = vector;
      const args = [...options(vector.lock.id), '--at', String(vector.lock.now), '--command', vector.command, '--channel', vector.channel, '--nonce', vector.lock.nonce];
      const child = spawnNode('src/simulator/cli.ts', [...args, ...(vector.proof !== null ? ['--proof', vector.proof] : []), vector.credential]);
      const exit = await child.waitForExit(PATIENCE_MS);
      expect(exit.code, child.stderr()).toBe(0);
      const printed = JSON.parse(child.stdout().trim()) as { decision: string; reason: string };
      expect({ decision: printed.decision, reason: printed.reason }).toEqual(vector.expect);
    });
  }

  it.for([
    [['--proof', 'a.b.c', 'x.y.z'], '--proof needs the --nonce'],
    [['--nonce', 'n'.repeat(43), 'x.y.z', 'x.y.z'], 'exactly one CREDENTIAL'],
    [['--nonce', 'n'.repeat(43)], 'exactly one CREDENTIAL'],
    [['--nonce', 'short', 'x.y.z'], '--nonce must be 22 to 128 base64url characters'],
    [['--nonce', 'n'.repeat(42) + '=', 'x.y.z'], '--nonce must be 22 to 128 base64url characters'],
  ] as const)('%j is a usage error: exit 2, nothing decided', async ([args, message]) => {
    // Port 9 answers nothing: a usage error is found before anything is fetched.
    const child = spawnNode('src/simulator/cli.ts', ['--url', 'http://127.0.0.1:9', '--client-id', 'c', '--client-secret', 's', '--secured-object', 'door', ...args]);
    const exit = await child.waitForExit(PATIENCE_MS);
    expect(exit.code, child.stderr()).toBe(2);
    expect(child.stderr()).toContain(message);
    expect(child.stdout()).toBe('');
  });
});
