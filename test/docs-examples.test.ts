// The code a guide tells integrators to copy works: the webhook check of docs/app-integration.md accepts what the
// delivery worker signs and refuses a changed body, a stale timestamp and another secret.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { signatures } from '../src/services/webhooks/sender.js';
import { newWebhookSecret } from '../src/services/webhooks/signing-secrets.js';

type Verify = (secret: string, headers: Record<string, string>, rawBody: string) => boolean;

describe('docs/app-integration.md: verifying a webhook', () => {
  let directory: string;
  let verifyWebhook: Verify;

  beforeAll(async () => {
    const guide = readFileSync(new URL('../docs/app-integration.md', import.meta.url), 'utf8');
    const blocks = [...guide.matchAll(/```js\n([\s\S]*?)```/g)].map((match) => match[1]!);
    expect(blocks.filter((block) => block.includes('function verifyWebhook'))).toHaveLength(1);
    directory = mkdtempSync(join(tmpdir(), 'docs-example-'));
    const file = join(directory, 'verify.mjs');
    writeFileSync(file, `${blocks.find((block) => block.includes('function verifyWebhook'))}\nexport { verifyWebhook };\n`);
    ({ verifyWebhook } = (await import(pathToFileURL(file).href)) as { verifyWebhook: Verify });
  });
  afterAll(() => {
    rmSync(directory, { recursive: true, force: true });
  });

  const delivery = (secrets: string[], body: string, at = new Date()) => ({
    'webhook-id': 'b6f1c2d0-6a52-4bb8-9b55-2a3c4f0e1d22',
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signatures(secrets.map((secret) => new Webhook(secret)), 'b6f1c2d0-6a52-4bb8-9b55-2a3c4f0e1d22', at, body),
  });
  const body = JSON.stringify({ id: 'b6f1c2d0-6a52-4bb8-9b55-2a3c4f0e1d22', type: 'ticket.revoked', sequence: 7, data: { ticketIds: ['x'] } });

  it('accepts a delivery as the worker signs it, also during a rotation (two signatures)', () => {
    const secret = newWebhookSecret();
    const previous = newWebhookSecret();
    expect(verifyWebhook(secret, delivery([secret], body), body)).toBe(true);
    expect(verifyWebhook(secret, delivery([secret, previous], body), body)).toBe(true);
    expect(verifyWebhook(previous, delivery([secret, previous], body), body)).toBe(true);
  });

  it('refuses a changed body, another secret and a timestamp older than five minutes', () => {
    const secret = newWebhookSecret();
    expect(verifyWebhook(secret, delivery([secret], body), body.replace('"sequence":7', '"sequence":8'))).toBe(false);
    expect(verifyWebhook(newWebhookSecret(), delivery([secret], body), body)).toBe(false);
    expect(verifyWebhook(secret, delivery([secret], body, new Date(Date.now() - 6 * 60_000)), body)).toBe(false);
  });
});
