// Baseline for the benchmarks: a bare Fastify hello-world (no logger, no plugins), run with plain node.
import process from 'node:process';
import Fastify from 'fastify';

const app = Fastify({ logger: false });

app.get('/', async () => ({ hello: 'world' }));

// The bench stops its children with SIGTERM; a terminal ctrl-c sends SIGINT to the whole group.
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.once(signal, () => {
    app.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}

await app.listen({ port: Number(process.env.PORT ?? 3000), host: process.env.HOST ?? '127.0.0.1' });
