// GET /: the landing page links the API documents, the OAuth metadata, the key set and the probes, and every link works.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';

describe('GET /', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('answers an HTML page that needs nothing from elsewhere', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(response.headers['content-security-policy']).toBe("default-src 'none'");
    expect(response.body).not.toMatch(/<script|<img|<link/);
  });

  it('links the three API documents, the OAuth document, the metadata, the key set and the probes, and each link answers', async () => {
    const page = (await t.app.inject({ method: 'GET', url: '/' })).body;
    const links = [...page.matchAll(/href="([^"]+)"/g)].map((match) => match[1]!);
    expect(links).toEqual(
      expect.arrayContaining([
        '/operatorapi/apidocs/',
        '/v1/swagger-ui/',
        '/deviceapi/apidocs/',
        '/oauth/apidocs/',
        '/oauth/apidocs/json',
        '/.well-known/oauth-authorization-server',
        '/.well-known/jwks.json',
        '/healthz',
        '/readyz',
        '/metrics',
      ]),
    );
    for (const link of links) {
      const response = await t.app.inject({ method: 'GET', url: link });
      expect(response.statusCode, link).toBe(200);
    }
  });
});
