// Micro-benchmark of the bearer check: tokens.verifyAccessToken(token, 'operatorapi') in-process, no HTTP.
import { randomBytes } from 'node:crypto';
import type { MicroBenchmark } from '../types.js';

/** Revoked clients and tokens held in memory while measuring: the look-ups then probe a populated map. */
const REVOKED_CLIENTS = 50;
const REVOKED_TOKENS = 50;

export const verifyAccessTokenBenchmarks: MicroBenchmark[] = [
  {
    name: 'verifyAccessToken (in-process)',
    description:
      "tokens.verifyAccessToken(token, 'operatorapi'): JWS signature, typ/iss/aud/exp checks and the revocation " +
      `look-ups, on the service's own modules over an in-memory PGlite (${REVOKED_CLIENTS} revoked clients and ` +
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
      const services = createServices({ db, config, log: createLogger('silent'), secretsKey: randomBytes(32) });
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
        const { access_token: token } = await services.tokens.clientCredentials(await authenticate(), undefined);
        // Fails here, before timing, if the token is refused: a benchmark of rejections would be meaningless.
        await services.tokens.verifyAccessToken(token, 'operatorapi');
        return {
          operation: () => services.tokens.verifyAccessToken(token, 'operatorapi'),
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
  },
];
