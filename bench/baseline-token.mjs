// Baseline for the token endpoint: a bare Fastify route that parses the same form (@fastify/formbody, as the service)
// and the HTTP Basic header, then signs an access token with the same claims, header and algorithm (EdDSA, ES256 with
// JWT_ALG=ES256) through node:crypto, as the service signs them; nothing else: no client look-up, no secret check,
// no rate limit, no metrics. It is the limit of a token endpoint on this machine (RFC 6749 4.4, RFC 9068 2.2).
import { generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import { Buffer } from 'node:buffer';
import process from 'node:process';
import formbody from '@fastify/formbody';
import Fastify from 'fastify';
import { exitOnSignals } from './baseline-shutdown.mjs';

const algorithm = process.env.JWT_ALG === 'ES256' ? 'ES256' : 'EdDSA';
const { privateKey } = algorithm === 'EdDSA' ? generateKeyPairSync('ed25519') : generateKeyPairSync('ec', { namedCurve: 'P-256' });
const header = Buffer.from(JSON.stringify({ alg: algorithm, kid: randomUUID(), typ: 'at+jwt' })).toString('base64url');
const issuer = JSON.stringify(process.env.ISSUER ?? 'http://127.0.0.1/tenants/bench');
const scope = 'tokens:create tokens:read tokens:delete devices:read devices:write clients:manage users:manage audit:read events:read webhooks:manage settings:manage';

function signToken(payloadJson) {
  const data = Buffer.from(`${header}.${Buffer.from(payloadJson).toString('base64url')}`, 'latin1');
  return new Promise((resolve, reject) => {
    const done = (error, signature) => (error ? reject(error) : resolve(`${data.toString('latin1')}.${signature.toString('base64url')}`));
    if (algorithm === 'EdDSA') sign(null, data, privateKey, done);
    else sign('sha256', data, { key: privateKey, dsaEncoding: 'ieee-p1363' }, done);
  });
}

const app = Fastify({ logger: false });
await app.register(formbody);
app.get('/', async () => ({ ready: true }));

app.post('/token', async (request, reply) => {
  const authorization = request.headers.authorization ?? '';
  const [clientId] = Buffer.from(authorization.slice('Basic '.length), 'base64').toString('utf8').split(':');
  if (request.body?.grant_type !== 'client_credentials' || !clientId) return reply.code(400).send({ error: 'invalid_request' });
  const iat = Math.floor(Date.now() / 1000);
  const id = JSON.stringify(decodeURIComponent(clientId));
  const token = await signToken(
    `{"iss":${issuer},"sub":${id},"aud":"operatorapi","client_id":${id},"tenant":"bench","scope":${JSON.stringify(scope)},"iat":${iat},"exp":${iat + 3600},"jti":"${randomUUID()}"}`,
  );
  reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
  return { access_token: token, token_type: 'Bearer', expires_in: 3600, scope };
});

exitOnSignals(() => app.close());

await app.listen({ port: Number(process.env.PORT ?? 3000), host: process.env.HOST ?? '127.0.0.1' });
