// One delivery's pure parts (services/webhooks/sender.ts): the Standard Webhooks signature header, one signature per
// secret, and the short reasons a failed request is logged with (never the receiver's body or a secret).
import { describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { reasonOf, signatures } from '../../../../src/services/webhooks/sender.js';
import { newWebhookSecret } from '../../../../src/services/webhooks/signing-secrets.js';

const errorWith = (code: string, message = code) => Object.assign(new Error(message), { code });

describe('signatures', () => {
  const id = 'b6f1c2d0-6a52-4bb8-9b55-2a3c4f0e1d22';
  const body = JSON.stringify({ id, type: 'webhook.test' });
  const at = new Date();
  const headers = (signature: string) => ({
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signature,
  });

  it('is one v1 signature per secret, space-separated, each verifying with its own secret', () => {
    const current = newWebhookSecret();
    const previous = newWebhookSecret();
    const header = signatures([new Webhook(current), new Webhook(previous)], id, at, body);
    const [first, second] = header.split(' ');
    expect(header.split(' ')).toHaveLength(2);
    expect(first).toMatch(/^v1,/);
    expect(new Webhook(current).verify(body, headers(first!))).toEqual(JSON.parse(body));
    expect(new Webhook(previous).verify(body, headers(second!))).toEqual(JSON.parse(body));
    expect(() => new Webhook(current).verify(body, headers(second!))).toThrow();
  });
});

describe('reasonOf', () => {
  it('names the timeout', () => {
    expect(reasonOf(new Error('timeout'), 2000)).toBe('no answer within 2000 ms');
  });

  it('names refused and reset connections and TLS failures by their code only', () => {
    expect(reasonOf(errorWith('ECONNREFUSED', 'connect ECONNREFUSED 10.0.0.1:443'), 2000)).toBe('connection refused');
    expect(reasonOf(errorWith('ECONNRESET', 'socket hang up'), 2000)).toBe('connection reset');
    expect(reasonOf(errorWith('ERR_TLS_CERT_ALTNAME_INVALID', 'Hostname/IP does not match'), 2000)).toBe('TLS error (ERR_TLS_CERT_ALTNAME_INVALID)');
    expect(reasonOf(errorWith('DEPTH_ZERO_SELF_SIGNED_CERT'), 2000)).toBe('TLS error (DEPTH_ZERO_SELF_SIGNED_CERT)');
  });

  it('keeps the guard\'s refusal and an unknown name, cut to 300 characters', () => {
    expect(reasonOf(errorWith('EACCES', 'webhook address refused: 10.0.0.1 is private'), 2000)).toBe('webhook address refused: 10.0.0.1 is private');
    expect(reasonOf(errorWith('ENOTFOUND', `getaddrinfo ENOTFOUND ${'a'.repeat(400)}`), 2000)).toHaveLength(300);
  });

  it('says no more than the code of any other failure, and nothing of its message', () => {
    expect(reasonOf(errorWith('EPIPE', 'secret-looking detail'), 2000)).toBe('request failed (EPIPE)');
    expect(reasonOf(errorWith('EACCES', 'permission denied'), 2000)).toBe('request failed (EACCES)');
    expect(reasonOf(new Error('body: {"token":"x"}'), 2000)).toBe('request failed');
    expect(reasonOf('a string', 2000)).toBe('request failed');
  });
});
