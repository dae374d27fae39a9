// Baseline for the benchmarks: a bare Fastify hello-world (no logger, no plugins), run with plain node.
import process from 'node:process';
import Fastify from 'fastify';
import { exitOnSignals } from './baseline-shutdown.mjs';

const app = Fastify({ logger: false });

app.get('/', async () => ({ hello: 'world' }));

exitOnSignals(() => app.close());

await app.listen({ port: Number(process.env.PORT ?? 3000), host: process.env.HOST ?? '127.0.0.1' });
