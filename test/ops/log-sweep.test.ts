// The sweep every test app runs over its logs when it closes (docs/house-style.md convention 12) recognises what it must.
import { describe, expect, it } from 'vitest';
import { assertNoSecretsLogged } from '../helpers/app.js';

describe('the log sweep of every test file', () => {
  it.each([
    ['a JWT', '{"msg":"x","token":"eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJhYmMifQ.c2lnbmF0dXJlLWJ5dGVz"}'],
    ['a bcrypt hash', `{"err":{"params":["$2b$10$${'a'.repeat(53)}"]}}`],
    ['a Basic credential', '{"req":{"headers":{"authorization":"Basic YWJjZGVmZ2hpamtsbW5vcA=="}}}'],
    ['a form-encoded secret', '{"req":{"url":"/oauth/token?client_secret=hunter2"}}'],
  ])('refuses %s', (_what, line) => {
    expect(() => assertNoSecretsLogged([line])).toThrow(/log line holds/);
  });

  it('lets redacted and ordinary lines through', () => {
    expect(() =>
      assertNoSecretsLogged([
        '{"req":{"url":"/oauth/token?client_secret=[Redacted]&password=[Redacted]"}}',
        '{"msg":"request completed","res":{"statusCode":200},"requestId":"6b895db8-756d-4809-8868-3dd89e1cb884"}',
      ]),
    ).not.toThrow();
  });
});
