// The named baselines: reference servers started as child processes, each with the request it is measured on.
import { randomBytes, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { basicAuthorization, newTicketBody } from './requests.js';
import type { MeasuredRequest } from './types.js';

export interface BaselineLaunch {
  command: string;
  args: string[];
  /** Added to the environment; the runner sets PORT and HOST itself. */
  env?: Record<string, string>;
}

export interface BaselineDefinition {
  description: string;
  /** How to start it; `databaseUrl` is the run's fresh (migrated) database, for baselines that need one. */
  launch(context: { databaseUrl: string }): BaselineLaunch;
  /** Polled until it answers 2xx before anything is measured. */
  readyPath: string;
  /** The request whose req/s every scenario naming this baseline is divided by; it is its own table row. */
  reference: MeasuredRequest;
}

const helloWorldServer = fileURLToPath(new URL('./baseline-server.mjs', import.meta.url));
const oidcProviderServer = fileURLToPath(new URL('./baseline-oidc-provider.mjs', import.meta.url));
const insertServer = fileURLToPath(new URL('./baseline-insert.mjs', import.meta.url));
const selectServer = fileURLToPath(new URL('./baseline-select.mjs', import.meta.url));
const tokenServer = fileURLToPath(new URL('./baseline-token.mjs', import.meta.url));

/** The ticket the select baseline inserts at start and reads on every request. */
const selectTicketId = randomUUID();

/** The one client of the oidc-provider baseline: its secret is made per run and handed to the server. */
const oidcClient = { id: 'bench', secret: randomBytes(32).toString('base64url') };

/**
 * Add a baseline to `definitions` and name it in a scenario's `baseline`. Only the baselines some selected scenario
 * names are started.
 */
const definitions = {
  hello: {
    description: 'bare Fastify hello-world, logger off (bench/baseline-server.mjs)',
    launch: () => ({ command: process.execPath, args: [helloWorldServer] }),
    readyPath: '/',
    reference: { name: 'hello-world GET /', method: 'GET', path: '/' },
  },
  'oidc-provider': {
    description: 'node-oidc-provider, client_credentials grant, JWT access tokens, in-memory (bench/baseline-oidc-provider.mjs)',
    launch: () => ({
      command: process.execPath,
      args: [oidcProviderServer],
      env: { OIDC_CLIENT_ID: oidcClient.id, OIDC_CLIENT_SECRET: oidcClient.secret },
    }),
    readyPath: '/.well-known/openid-configuration',
    reference: {
      name: 'oidc-provider POST /token (client_credentials)',
      method: 'POST',
      path: '/token',
      headers: {
        authorization: basicAuthorization(oidcClient.id, oidcClient.secret),
        'content-type': 'application/x-www-form-urlencoded',
      },
      // Its resource server has one scope; asked for, it lands in the token as the service's scopes do.
      body: 'grant_type=client_credentials&scope=api%3Aread',
    },
  },
  token: {
    description: 'bare Fastify + @fastify/formbody: parses the token form and signs the same access token, nothing else (bench/baseline-token.mjs)',
    launch: () => ({ command: process.execPath, args: [tokenServer] }),
    readyPath: '/',
    reference: {
      name: 'token POST /token (parse and sign)',
      method: 'POST',
      path: '/token',
      headers: {
        authorization: basicAuthorization('bench-client', 'bench-secret'),
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'grant_type=client_credentials',
    },
  },
  insert: {
    description: 'bare Fastify + pg Pool: the INSERT INTO tickets ... RETURNING of a new ticket (bench/baseline-insert.mjs)',
    launch: ({ databaseUrl }) => ({
      command: process.execPath,
      args: [insertServer],
      env: { DATABASE_URL: databaseUrl },
    }),
    readyPath: '/',
    reference: {
      name: 'insert POST /tickets',
      method: 'POST',
      path: '/tickets',
      body: newTicketBody('BENCH', 'bench-device'),
    },
  },
  select: {
    description: 'bare Fastify + pg Pool: the SELECT of one ticket by tenant and id, prepared (bench/baseline-select.mjs)',
    launch: ({ databaseUrl }) => ({
      command: process.execPath,
      args: [selectServer],
      env: { DATABASE_URL: databaseUrl, TICKET_ID: selectTicketId },
    }),
    readyPath: '/',
    reference: { name: 'select GET /tickets/{id}', method: 'GET', path: `/tickets/${selectTicketId}` },
  },
} satisfies Record<string, BaselineDefinition>;

export type BaselineName = keyof typeof definitions;

export const baselines: Record<BaselineName, BaselineDefinition> = definitions;
