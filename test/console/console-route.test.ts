// docs/console.md: the console's files at /console/ (content types, the client routes' fallback, the
// Content-Security-Policy, a 503 while it is not built) and GET /console/config?tenant=, the tenant's console client.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { temporaryDirectory } from '../helpers/process.js';
import { expectProblem } from '../helpers/operator.js';

const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
const INDEX = '<!doctype html><html lang="en"><head><title>Console</title><script type="module" src="/console/assets/app-1a2b.js"></script></head><body></body></html>';

describe('the console\'s route: its files and its configuration lookup', () => {
  let built: { path: string; remove(): void };
  let empty: { path: string; remove(): void };
  let t: TestApp;
  let unbuilt: TestApp;
  let consoleClientId: string;
  let unbuiltClientId: string;

  beforeAll(async () => {
    built = temporaryDirectory('acs-console-built-');
    mkdirSync(join(built.path, 'assets'));
    writeFileSync(join(built.path, 'index.html'), INDEX);
    writeFileSync(join(built.path, 'assets', 'app-1a2b.js'), 'console.log("console");\n');
    writeFileSync(join(built.path, 'assets', 'app-1a2b.css'), 'body { margin: 0; }\n');
    writeFileSync(join(built.path, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
    empty = temporaryDirectory('acs-console-empty-');
    t = await buildTestApp({}, { consoleDirectory: built.path });
    unbuilt = await buildTestApp({}, { consoleDirectory: empty.path });
    consoleClientId = (await t.app.services.tenants.create('consoled')).consoleClientId;
    unbuiltClientId = (await unbuilt.app.services.tenants.create('consoled')).consoleClientId;
  });
  afterAll(async () => {
    await t?.close();
    await unbuilt?.close();
    built?.remove();
    empty?.remove();
  });

  const get = (url: string, app = t) => app.app.inject({ method: 'GET', url });

  it('serves index.html at /console/ with the strict Content-Security-Policy', async () => {
    const response = await get('/console/');
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(response.headers['content-security-policy']).toBe(CSP);
    expect(response.headers['x-content-type-options']).toBe('nosniff');
    expect(response.headers['referrer-policy']).toBe('no-referrer');
    expect(response.headers['cache-control']).toBe('no-cache');
    expect(response.body).toBe(INDEX);
  });

  it('answers index.html for the callback and every client route, so a reload or a deep link works', async () => {
    for (const path of ['/console/callback?code=abc&state=def', '/console/doors', '/console/people?resident=x', '/console/access-log']) {
      const response = await get(path);
      expect(response.statusCode, path).toBe(200);
      expect(response.body, path).toBe(INDEX);
      expect(response.headers['content-security-policy'], path).toBe(CSP);
    }
  });

  it('serves assets with their content types, hashed ones cached for good', async () => {
    const script = await get('/console/assets/app-1a2b.js');
    expect(script.statusCode).toBe(200);
    expect(script.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(script.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(script.body).toBe('console.log("console");\n');
    const style = await get('/console/assets/app-1a2b.css');
    expect(style.headers['content-type']).toBe('text/css; charset=utf-8');
    const icon = await get('/console/favicon.svg');
    expect(icon.headers['content-type']).toBe('image/svg+xml');
    expect(icon.headers['cache-control']).toBe('no-cache');
  });

  it('answers 404 for a missing file and never a file outside the console\'s directory', async () => {
    expectProblem(await get('/console/assets/missing-0000.js'), 404);
    for (const path of ['/console/..%2f..%2fpackage.json', '/console/%2e%2e/%2e%2e/etc/passwd.txt', '/console/assets/..%2f..%2f..%2fpackage.json']) {
      const response = await get(path);
      expect(response.statusCode, path).toBe(404);
      expect(response.body, path).not.toContain('"name"');
    }
  });

  it('redirects /console to /console/', async () => {
    const response = await get('/console');
    expect(response.statusCode).toBe(302);
    expect(response.headers.location).toBe('/console/');
  });

  it('answers a 503 problem saying to build while the console is not built', async () => {
    for (const path of ['/console/', '/console/doors', '/console/assets/app-1a2b.js']) {
      const problem = expectProblem(await get(path, unbuilt), 503);
      expect(problem.detail, path).toContain('npm run build');
    }
  });

  it('GET /console/config names the tenant\'s console client', async () => {
    const response = await get('/console/config?tenant=consoled');
    expect(response.statusCode).toBe(200);
    expect(response.headers['cache-control']).toBe('no-store');
    expect(response.json()).toEqual({ tenant: 'consoled', clientId: consoleClientId, redirectPath: '/console/callback' });
    // The same with the console not built: the lookup does not depend on the files.
    const unbuiltAnswer = await get('/console/config?tenant=consoled', unbuilt);
    expect(unbuiltAnswer.statusCode).toBe(200);
    expect(unbuiltAnswer.json()).toMatchObject({ clientId: unbuiltClientId });
  });

  it('GET /console/config: 404 for an unknown tenant, 400 for no name or one that cannot be a tenant\'s', async () => {
    expect(expectProblem(await get('/console/config?tenant=nobody'), 404).detail).toBe('No tenant nobody.');
    expectProblem(await get('/console/config'), 400);
    expectProblem(await get('/console/config?tenant=a%20b'), 400);
    expectProblem(await get('/console/config?tenant=consoled&extra=1'), 400);
  });

  it('GET /console/config: 404 once the tenant\'s console client is deleted', async () => {
    const created = await t.app.services.tenants.create('console-less');
    const tenant = await t.app.services.tenants.byName('console-less');
    await t.app.services.clients.delete({ tenantId: tenant.id, actor: 'cli', requestId: null }, created.consoleClientId);
    expect(expectProblem(await get('/console/config?tenant=console-less'), 404).detail).toBe('The tenant console-less has no console client.');
  });
});
