// Every API's Swagger UI opens at its documented entry, `{prefix}/index.html` included (docs/api-reference.md 1).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';

const UI_PREFIXES = ['/operatorapi/apidocs', '/v1/swagger-ui', '/deviceapi/apidocs', '/oauth/apidocs'];

describe('Swagger UI entries', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp();
  });
  afterAll(() => t.close());

  it.each(UI_PREFIXES)('%s/index.html leads to the Swagger UI page', async (prefix) => {
    const entry = await t.app.inject({ method: 'GET', url: `${prefix}/index.html` });
    expect(entry.statusCode).toBe(302);
    expect(entry.headers.location).toBe(`${prefix}/`);
    const page = await t.app.inject({ method: 'GET', url: entry.headers.location! });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.body).toMatch(/swagger-ui/i);
  });
});
