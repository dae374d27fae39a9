// Who may scrape GET /metrics: METRICS_TOKEN as a bearer token, a listener of its own (METRICS_PORT), and the refusal otherwise.
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { apiListenerMetricsAccess, ownListenerMetricsAccess } from '../../src/plugins/metrics.js';
import { listenForMetrics } from '../../src/plugins/metrics-listener.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { freePort } from '../helpers/process.js';

const TOKEN = 'c2VjcmV0LW1ldHJpY3MtdG9rZW4tZm9yLXRlc3Rz';
/** The helper serves metrics openly to keep other tests short; these tests ask for the default. */
const DEFAULT = { METRICS_UNAUTHENTICATED: 'false' };

describe('GET /metrics with METRICS_TOKEN', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ ...DEFAULT, METRICS_TOKEN: TOKEN });
  });
  afterAll(() => t.close());

  it('answers 401 with a Bearer challenge without a token, or with another one', async () => {
    const none = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(none.statusCode).toBe(401);
    expect(none.headers['www-authenticate']).toBe('Bearer realm="metrics"');
    expect(none.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(none.body).not.toContain('http_requests_total');
    for (const authorization of [`Bearer ${TOKEN.slice(0, -1)}x`, `Bearer ${TOKEN}${TOKEN}`, `Basic ${TOKEN}`, TOKEN]) {
      const wrong = await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization } });
      expect(wrong.statusCode, authorization).toBe(401);
      expect(wrong.body).not.toContain('http_requests_total');
    }
    const wrong = await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer not-the-token' } });
    expect(wrong.headers['www-authenticate']).toBe('Bearer realm="metrics", error="invalid_token"');
  });

  it('answers 200 with the Prometheus text to the token', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/plain/);
    expect(response.body).toContain('# TYPE http_requests_total counter');
  });
});

describe('GET /metrics without METRICS_TOKEN', () => {
  let t: TestApp;
  beforeAll(async () => {
    // PUBLIC_URL names another machine: HOST defaults to 0.0.0.0, a listener others reach.
    t = await buildTestApp(DEFAULT);
  });
  afterAll(() => t.close());

  it('is refused (403) on a listener other machines may reach, saying what to set', async () => {
    expect(t.config.HOST).toBe('0.0.0.0');
    const response = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(response.statusCode).toBe(403);
    const body = response.json<{ detail: string }>();
    expect(body.detail).toContain('METRICS_TOKEN');
    expect(body.detail).toContain('METRICS_PORT');
    expect(response.body).not.toContain('http_requests_total');
  });

  it('is open on a development start only (loopback HOST and PUBLIC_URL), or when the operator says so', () => {
    const open = (env: Record<string, string>) => apiListenerMetricsAccess(loadConfig({ ...DEFAULT, ...env }))?.openWithoutToken;
    expect(open({})).toBe(true);
    expect(open({ HOST: '127.0.0.1', PUBLIC_URL: 'http://localhost:8080' })).toBe(true);
    // A reverse proxy on this machine would hand /metrics to anyone: a loopback HOST alone is not enough.
    expect(open({ HOST: '127.0.0.1', PUBLIC_URL: 'https://acs.example.com' })).toBe(false);
    expect(open({ HOST: '0.0.0.0', PUBLIC_URL: 'https://acs.example.com' })).toBe(false);
    expect(open({ PUBLIC_URL: 'https://acs.example.com', METRICS_UNAUTHENTICATED: 'true' })).toBe(true);
    expect(apiListenerMetricsAccess(loadConfig({ METRICS_PORT: '9464' }))).toBeNull();
  });
});

describe('GET /metrics on a listener of its own (METRICS_PORT)', () => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    port = await freePort();
    t = await buildTestApp({ ...DEFAULT, METRICS_PORT: String(port) });
  });
  afterAll(() => t.close());

  it('is not served on the API listener', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(404);
  });

  it('is served on METRICS_HOST:METRICS_PORT (loopback by default) and nothing else is', async () => {
    const listener = await listenForMetrics(t.app.metrics, { ...t.config, METRICS_PORT: port }, createLogger('silent'));
    try {
      expect((listener.server.address() as AddressInfo).address).toBe('127.0.0.1');
      const response = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(response.status).toBe(200);
      expect(await response.text()).toContain('# TYPE http_requests_total counter');
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(404);
    } finally {
      await listener.close();
    }
  });

  it('needs the token beyond loopback (METRICS_HOST=0.0.0.0)', async () => {
    // A port of its own: the client keeps no connection to the listener closed above.
    const widePort = await freePort();
    const wide = loadConfig({ ...DEFAULT, PUBLIC_URL: 'http://issuer.test', METRICS_PORT: String(widePort), METRICS_HOST: '0.0.0.0' });
    expect(ownListenerMetricsAccess(wide)).toEqual({ token: undefined, openWithoutToken: false });
    const withToken = { ...wide, METRICS_TOKEN: TOKEN, METRICS_PORT: widePort };
    const listener = await listenForMetrics(t.app.metrics, withToken, createLogger('silent'));
    try {
      const none = await fetch(`http://127.0.0.1:${widePort}/metrics`);
      expect(none.status).toBe(401);
      expect(none.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      const good = await fetch(`http://127.0.0.1:${widePort}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(good.status).toBe(200);
    } finally {
      await listener.close();
    }
  });
});
