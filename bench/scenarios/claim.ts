// Enrolment by claim link (docs/api-reference.md 12): how long a phone takes from a claim link to its first bound
// credential (look-up, key proof, redemption, a private_key_jwt token, the download), one phone at a time, p50 and p99;
// and how many redemptions a second the service completes with the per-address limit off (bench/run.ts sets
// CLAIM_RATE_LIMIT_PER_MINUTE=0). Each enrolment changes state, so these are timed one by one, not with autocannon.
import { performance } from 'node:perf_hooks';
import type pg from 'pg';
import { PhoneSimulator, type PhoneHttp } from '../../src/simulator/phone-simulator.js';
import { es256KeyPair, signEs256 } from '../../src/simulator/es256.js';
import { expectOk, median, round, scaleTenant, seedDevicesAndLocks, type ScaleContext, type ScaleResult, type ScaleRun } from '../scale.js';

/** Enrolments timed one after another, end to end. */
const ENROLMENTS = Number(process.env.BENCH_CLAIM_ENROLMENTS || 60);
/** Redemptions sent for the throughput figure, and how many at once. */
const REDEMPTIONS = Number(process.env.BENCH_CLAIM_REDEMPTIONS || 200);
const CONCURRENCY = 10;
/** Locks the resident's permission reaches: each enrolled phone downloads one bound credential per lock. */
const LOCKS = 5;

/** The phone's network: fetch, the body parsed as JSON when there is one. */
const http: PhoneHttp = async (request) => {
  const response = await fetch(request.url, {
    method: request.method,
    ...(request.headers ? { headers: request.headers } : {}),
    ...(request.body !== undefined ? { body: request.body } : {}),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? null : (JSON.parse(text) as unknown) };
};

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))]!;

async function claimEnrolment(context: ScaleContext, db: pg.Client): Promise<ScaleResult[]> {
  const tenant = await scaleTenant(context, db, `claim-${process.pid}`);
  const now = Date.now();
  await seedDevicesAndLocks(db, tenant.tenantId, 'c', 0, LOCKS, now);
  const post = async (path: string, body: Record<string, unknown>) =>
    (await expectOk(context, { method: 'POST', path, headers: tenant.access, body }, 201)).body as { id: string; url: string; code: string };
  const resident = await post('/v1/residents', { name: 'Bench resident' });
  const group = await post('/v1/lock-groups', { name: 'Bench doors', securedObjectIds: Array.from({ length: LOCKS }, (_, n) => `c-l${n + 1}`) });
  await post('/v1/access-permissions', {
    residentId: resident.id,
    lockGroupId: group.id,
    beginDate: now - 86_400_000,
    endDate: now + 30 * 86_400_000,
    commands: ['open'],
    channels: ['btlespp'],
  });
  const claim = () => post(`/v1/residents/${resident.id}/claims`, {});

  // One phone at a time: from the link to its first bound credential.
  const latencies: number[] = [];
  for (let n = 0; n < ENROLMENTS; n++) {
    const { url } = await claim();
    const phone = new PhoneSimulator();
    const started = performance.now();
    await phone.enrol(url, http);
    const tokens = await phone.download(http);
    latencies.push(performance.now() - started);
    if (tokens.length !== LOCKS || !tokens[0]!.credential) throw new Error(`an enrolled phone downloaded ${tokens.length} tokens`);
  }

  // Throughput of the redemption alone: the claims, look-ups and proofs made first, then every redemption sent,
  // CONCURRENCY at a time.
  const prepared: { code: string; body: string }[] = [];
  for (let n = 0; n < REDEMPTIONS; n++) {
    const { code } = await claim();
    const looked = await http({ method: 'GET', url: `${context.appUrl}/deviceapi/claims/${code}` });
    const key = es256KeyPair();
    const proof = signEs256(key.privateKey, { typ: 'key-proof+jwt' }, { aud: context.appUrl, nonce: (looked.body as { nonce: string }).nonce, iat: Math.floor(Date.now() / 1000) });
    prepared.push({ code, body: JSON.stringify({ publicKey: key.publicKey, proof }) });
  }
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < prepared.length) {
        const { code, body } = prepared[next++]!;
        const answer = await http({ method: 'POST', url: `${context.appUrl}/deviceapi/claims/${code}`, headers: { 'content-type': 'application/json' }, body });
        if (answer.status !== 201) throw new Error(`a redemption answered ${answer.status}: ${JSON.stringify(answer.body).slice(0, 200)}`);
      }
    }),
  );
  const redemptionsPerSecond = REDEMPTIONS / ((performance.now() - started) / 1000);

  const p50 = median(latencies);
  return [
    {
      name: 'claim: link → first bound credential',
      description:
        `a phone enrols from a claim link (look-up, P-256 key, proof, redemption: device, secretless client, ${LOCKS} tickets), ` +
        'gets a token by private_key_jwt and downloads its bound credentials; one phone at a time',
      serviceSeconds: round(p50 / 1000, 4),
      baselineSeconds: null,
      reference: 'none (goal: p50 ≤ 50 ms)',
      ratio: null,
      goalRatio: null,
      goalMet: p50 <= 50,
      details: {
        enrolments: ENROLMENTS,
        p50Ms: round(p50, 1),
        p99Ms: round(percentile(latencies, 99), 1),
        redemptions: REDEMPTIONS,
        concurrency: CONCURRENCY,
        redemptionsPerSecond: round(redemptionsPerSecond, 1),
      },
    },
  ];
}

export const claimScaleRuns: ScaleRun[] = [{ name: 'claim: enrolment by claim link', run: claimEnrolment }];
