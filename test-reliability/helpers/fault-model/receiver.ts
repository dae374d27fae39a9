// The webhook receiver of the model: a local HTTP server that records each delivery's sequence and webhook-id. Broken
// on purpose (`drop`), it answers 200 to every third request and forgets it: a receiver that loses what it acknowledged.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Delivery {
  id: string;
  sequence: number;
  type: string;
}

export interface ModelReceiver {
  url: string;
  /** Every recorded delivery, in arrival order (duplicates included: delivery is at least once). */
  deliveries: Delivery[];
  close(): Promise<void>;
}

export async function startModelReceiver(options: { drop?: boolean } = {}): Promise<ModelReceiver> {
  const deliveries: Delivery[] = [];
  let requests = 0;
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      requests++;
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string; sequence: number; type: string };
        if (!(options.drop && requests % 3 === 0)) deliveries.push({ id: body.id, sequence: body.sequence, type: body.type });
      } catch {
        // not an event: recorded as nothing
      }
      response.statusCode = 200;
      response.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    deliveries,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
