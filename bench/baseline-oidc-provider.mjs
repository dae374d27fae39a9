// Baseline for the token endpoint: node-oidc-provider issuing JWT access tokens for the client_credentials grant.
import { generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';
import process from 'node:process';
import { setTimeout } from 'node:timers';

// Its start-up notices (development adapter and keys, "unsupported runtime" on Node 20) are not findings of a run:
// the bench flags any line a server prints while it is measured, so they are dropped. Everything else still shows.
const terminal = globalThis.console;
for (const method of ['warn', 'info']) {
  const original = terminal[method].bind(terminal);
  terminal[method] = (...args) => {
    if (typeof args[0] === 'string' && /oidc-provider (WARNING|NOTICE): /.test(args[0])) return;
    original(...args);
  };
}
// Imported only now, so that its import-time runtime check already meets the filter above.
const { default: Provider } = await import('oidc-provider');

const port = Number(process.env.PORT ?? 3000);
const host = process.env.HOST ?? '127.0.0.1';
const clientId = process.env.OIDC_CLIENT_ID ?? 'bench';
const clientSecret = process.env.OIDC_CLIENT_SECRET;
if (!clientSecret) throw new Error('OIDC_CLIENT_SECRET is required');
// The same signature algorithm as the service under test (its JWT_ALG, EdDSA by default).
const alg = process.env.JWT_ALG === 'ES256' ? 'ES256' : 'EdDSA';
const resource = 'urn:bench:api';
const scope = 'api:read';

const { privateKey } = alg === 'EdDSA' ? generateKeyPairSync('ed25519') : generateKeyPairSync('ec', { namedCurve: 'P-256' });
const signingKey = { ...privateKey.export({ format: 'jwk' }), kid: 'bench', alg, use: 'sig' };

/** A plain in-memory adapter (the bundled one works alike but announces itself as development-only). */
class MemoryAdapter {
  static store = new Map();

  constructor(model) {
    this.model = model;
  }

  key(id) {
    return `${this.model}:${id}`;
  }

  async upsert(id, payload, expiresIn) {
    MemoryAdapter.store.set(this.key(id), { payload, expiresAt: expiresIn ? Date.now() + expiresIn * 1000 : Infinity });
  }

  async find(id) {
    const entry = MemoryAdapter.store.get(this.key(id));
    if (!entry) return undefined;
    if (entry.expiresAt <= Date.now()) {
      MemoryAdapter.store.delete(this.key(id));
      return undefined;
    }
    return entry.payload;
  }

  async findByUserCode() {
    return undefined;
  }

  async findByUid() {
    return undefined;
  }

  async consume(id) {
    const entry = MemoryAdapter.store.get(this.key(id));
    if (entry) entry.payload.consumed = Math.floor(Date.now() / 1000);
  }

  async destroy(id) {
    MemoryAdapter.store.delete(this.key(id));
  }

  async revokeByGrantId() {}
}

const provider = new Provider(`http://127.0.0.1:${port}`, {
  adapter: MemoryAdapter,
  jwks: { keys: [signingKey] },
  clients: [
    {
      client_id: clientId,
      client_secret: clientSecret,
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: 'client_secret_basic',
      // The provider only holds this one key; the default (RS256) would make the client metadata invalid.
      id_token_signed_response_alg: alg,
      scope,
    },
  ],
  scopes: [scope],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resource,
      useGrantedResource: () => true,
      getResourceServerInfo: () => ({
        scope,
        audience: resource,
        accessTokenTTL: 3600,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg } },
      }),
    },
  },
});

const server = createServer(provider.callback());

// The bench stops its children with SIGTERM; a terminal ctrl-c sends SIGINT to the whole group.
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.once(signal, () => {
    server.close(() => process.exit(0));
    server.closeIdleConnections();
    setTimeout(() => process.exit(0), 2000).unref();
  });
}

server.listen(port, host);
