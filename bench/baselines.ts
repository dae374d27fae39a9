// The named baselines: reference servers started as child processes, each with the request it is measured on.
import { fileURLToPath } from 'node:url';
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

/**
 * Add a baseline to `definitions` (e.g. a bare Fastify route doing the same INSERT, or node-oidc-provider's token
 * endpoint) and name it in a scenario's `baseline`. Only the baselines some selected scenario names are started.
 */
const definitions = {
  hello: {
    description: 'bare Fastify hello-world, logger off (bench/baseline-server.mjs)',
    launch: () => ({ command: process.execPath, args: [helloWorldServer] }),
    readyPath: '/',
    reference: { name: 'hello-world GET /', method: 'GET', path: '/' },
  },
} satisfies Record<string, BaselineDefinition>;

export type BaselineName = keyof typeof definitions;

export const baselines: Record<BaselineName, BaselineDefinition> = definitions;
