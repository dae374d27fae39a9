// Micro-benchmark of the bearer check: tokens.verifyAccessToken(token, 'operatorapi') in-process, no HTTP.
import { randomBytes } from 'node:crypto';
import type { MicroBenchmark } from '../types.js';
import { secretsKeyOf } from '../../src/shared/crypto.js';

/** Revoked clients and tokens held in memory while measuring: the look-ups then probe a populated map. */
const REVOKED_CLIENTS = 50;
const REVOKED_TOKENS = 50;

/** Tokens issued up front for the first-use variant: more than warm-up + measured calls by default (6,000). */
const FRESH_TOKENS = 7000;

/** `fresh`: every call verifies a token never seen before (signature checked); else one token again and again. */
function verifyBenchmark(fresh: boolean): MicroBenchmark {
  return {
    name: fresh ? 'verifyAccessToken, first use (in-process)' : 'verifyAccessToken, repeated token (in-process)',
    description:
      "tokens.verifyAccessToken(token, 'operatorapi'): " +
      (fresh
        ? 'a new token each call, so the JWS signature, typ/iss/aud/exp checks and the revocation look-ups all run'
        : 'the same token each call, as a backend reuses its token: the verified-token cache, expiry, audience and revocation look-ups') +
      `, on the service's own modules over an in-memory PGlite (${REVOKED_CLIENTS} revoked clients and ` +
      `${REVOKED_TOKENS} revoked tokens in memory)`,
    goalMeanMicros: 500,
    async prepare() {
      // Loaded only when this benchmark runs: the harness itself stays free of the service's modules.
      const [{ loadConfig }, { createLogger }, { createPgliteDatabase }, { migrate }, { createServices }] = await Promise.all([
        import('../../src/config.js'),
        import('../../src/logger.js'),
        import('../../src/db/pglite.js'),
        import('../../src/db/migrate.js'),
        import('../../src/services/index.js'),
      ]);
      // The algorithm the service under test signs with in this run (EdDSA unless JWT_ALG says otherwise).
      const config = loadConfig({ PUBLIC_URL: 'http://127.0.0.1:8080', JWT_ALG: process.env.JWT_ALG });
      const db = await createPgliteDatabase();
      const services = createServices({ db, config, log: createLogger('silent'), secretsKey: secretsKeyOf(randomBytes(32)) });
      try {
        await migrate(db);
        await services.start();
        const { tenant, clientId, clientSecret } = await services.tenants.create('bench-verify');
        const authenticate = async () => {
          const client = await services.clients.authenticate(clientId, clientSecret);
          if (!client) throw new Error('the management client did not authenticate');
          return client;
        };
        const context = { tenantId: tenant.id, actor: 'cli', requestId: null };
        for (let i = 0; i < REVOKED_CLIENTS; i++) {
          const other = await services.clients.create(context, { name: `revoked ${i}`, scopes: ['tokens:read'] });
          await services.clients.delete(context, other.clientId);
        }
        for (let i = 0; i < REVOKED_TOKENS; i++) {
          const other = await services.tokens.clientCredentials(await authenticate(), undefined);
          await services.tokens.revoke(await authenticate(), other.access_token);
        }
        const client = await authenticate();
        const tokens: string[] = [];
        for (let i = 0; i < (fresh ? FRESH_TOKENS : 1); i++) tokens.push((await services.tokens.clientCredentials(client, undefined)).access_token);
        // Fails here, before timing, if a token is refused: a benchmark of rejections would be meaningless. The
        // first-use variant checks its last token only, so the others stay unseen.
        await services.tokens.verifyAccessToken(tokens[tokens.length - 1]!, 'operatorapi');
        let next = 0;
        return {
          operation: () => services.tokens.verifyAccessToken(tokens[next++ % tokens.length]!, 'operatorapi'),
          async close() {
            await services.stop();
            await db.close();
          },
        };
      } catch (error) {
        await services.stop().catch(() => undefined);
        await db.close().catch(() => undefined);
        throw error;
      }
    },
  };
}

export const verifyAccessTokenBenchmarks: MicroBenchmark[] = [verifyBenchmark(true), verifyBenchmark(false)];
