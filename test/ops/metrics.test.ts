// GET /metrics: Prometheus text with request counts and latencies by route pattern and status, and pool figures.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { sample } from '../helpers/metrics.js';

describe('metrics', () => {
  let t: TestApp;
  let text: string;
  let contentType: string | undefined;
  beforeAll(async () => {
    t = await buildTestApp();
    for (let i = 0; i < 3; i++) expect((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    expect((await t.app.inject({ method: 'GET', url: '/no/such/thing/1' })).statusCode).toBe(404);
    expect((await t.app.inject({ method: 'GET', url: '/no/such/thing/2' })).statusCode).toBe(404);
    expect((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    const response = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(response.statusCode).toBe(200);
    text = response.body;
    contentType = String(response.headers['content-type']);
  });
  afterAll(async () => {
    await t.close();
  });

  it('answers Prometheus text format', () => {
    expect(contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(text).toMatch(/^# HELP http_requests_total /m);
    expect(text).toMatch(/^# TYPE http_requests_total counter$/m);
    expect(text).toMatch(/^# TYPE http_request_duration_seconds histogram$/m);
  });

  it('counts requests by method, route pattern and status', () => {
    expect(sample(text, 'http_requests_total', { method: 'GET', route: '/healthz', status: '200' })).toBe(3);
    expect(sample(text, 'http_requests_total', { method: 'GET', route: '/readyz', status: '200' })).toBe(1);
  });

  it('counts unknown paths under one "unmatched" route, not one label per URL', () => {
    expect(sample(text, 'http_requests_total', { method: 'GET', route: 'unmatched', status: '404' })).toBe(2);
    expect(text).not.toContain('/no/such/thing');
  });

  it('records latencies in histogram buckets', () => {
    const labels = { method: 'GET', route: '/healthz', status: '200' };
    expect(sample(text, 'http_request_duration_seconds_bucket', { ...labels, le: '0.005' })).toEqual(expect.any(Number));
    expect(sample(text, 'http_request_duration_seconds_bucket', { ...labels, le: '+Inf' })).toBe(3);
    expect(sample(text, 'http_request_duration_seconds_count', labels)).toBe(3);
    const sum = sample(text, 'http_request_duration_seconds_sum', labels)!;
    expect(sum).toBeGreaterThan(0);
    expect(sum).toBeLessThan(5);
  });

  it('reports the database pool', () => {
    const total = sample(text, 'db_pool_connections');
    expect(total).toEqual(expect.any(Number));
    expect(total).toBeGreaterThanOrEqual(t.database.db.kind === 'pglite' ? 1 : 0);
    expect(sample(text, 'db_pool_idle_connections')).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'db_pool_waiting_requests')).toBe(0);
  });

  it('reports process metrics', () => {
    expect(sample(text, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(sample(text, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
  });

  it('counts the /metrics scrape itself on the next scrape', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(sample(response.body, 'http_requests_total', { method: 'GET', route: '/metrics', status: '200' })).toBeGreaterThanOrEqual(1);
    expect(sample(response.body, 'http_requests_total', { method: 'GET', route: '/healthz', status: '200' })).toBe(3);
  });

  it('keeps counters apart between two apps in one process', async () => {
    const other = await buildTestApp();
    try {
      const response = await other.app.inject({ method: 'GET', url: '/metrics' });
      expect(sample(response.body, 'http_requests_total', { route: '/healthz' })).toBeUndefined();
    } finally {
      await other.close();
    }
  });
});
