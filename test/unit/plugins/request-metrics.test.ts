// The request metrics kept in arrays (plugins/request-metrics.ts) scrape as the same text prom-client's Counter and Histogram do.
import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import {
  createRequestMetrics,
  REQUEST_COUNTER_NAME,
  REQUEST_DURATION_BUCKETS,
  REQUEST_DURATION_NAME,
} from '../../../src/plugins/request-metrics.js';

/** Observations as the onResponse hook makes them: a route config object, its label, method, status, seconds. */
const tickets = { url: '/operatorapi/tickets/:id' };
const health = { url: '/healthz' };
const notFoundA = {};
const notFoundB = {};
const observations: [object, string, string, number, number][] = [
  [tickets, '/operatorapi/tickets/:id', 'GET', 200, 0.0004],
  [health, '/healthz', 'GET', 200, 0.001],
  [tickets, '/operatorapi/tickets/:id', 'GET', 404, 0.003],
  [tickets, '/operatorapi/tickets/:id', 'DELETE', 200, 0.02],
  // Two config objects under one label (the 404 handlers of two prefixes) are one series.
  [notFoundA, 'unmatched', 'GET', 404, 0.0025],
  [notFoundB, 'unmatched', 'GET', 404, 7],
  [tickets, '/operatorapi/tickets/:id', 'GET', 200, 0.3],
  [health, '/healthz', 'HEAD', 200, 0.0000001],
];

/** The metrics as they were: prom-client's own Counter and Histogram with the same names, help, labels and buckets. */
async function promClientText(): Promise<{ text: string; json: unknown }> {
  const registry = new Registry();
  const requests = new Counter({
    name: REQUEST_COUNTER_NAME,
    help: 'HTTP requests answered, by method, route pattern and status code.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: REQUEST_DURATION_NAME,
    help: 'Time from receiving a request to sending its response, by method, route pattern and status code.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [...REQUEST_DURATION_BUCKETS],
    registers: [registry],
  });
  for (const [, route, method, status, seconds] of observations) {
    const labels = { method, route, status: String(status) };
    requests.inc(labels);
    duration.observe(labels, seconds);
  }
  return { text: await registry.metrics(), json: await registry.getMetricsAsJSON() };
}

async function ownText(): Promise<{ text: string; json: unknown }> {
  const registry = new Registry();
  const metrics = createRequestMetrics();
  metrics.register(registry);
  for (const [config, route, method, status, seconds] of observations) metrics.observe(config, route, method, status, seconds);
  return { text: await registry.metrics(), json: await registry.getMetricsAsJSON() };
}

describe('request metrics', () => {
  it('scrape as the same Prometheus text and JSON as prom-client, series in first-seen order', async () => {
    const expected = await promClientText();
    const own = await ownText();
    expect(own.text).toBe(expected.text);
    expect(own.json).toEqual(expected.json);
    // The comparison is not vacuous: the text holds every series and bucket observed above.
    expect(own.text).toContain('http_requests_total{method="GET",route="unmatched",status="404"} 2');
    expect(own.text).toContain('http_request_duration_seconds_bucket{le="0.005",method="GET",route="/operatorapi/tickets/:id",status="200"} 1');
    expect(own.text).toContain('http_request_duration_seconds_bucket{le="+Inf",method="GET",route="unmatched",status="404"} 2');
    expect(own.text).toContain('http_request_duration_seconds_count{method="HEAD",route="/healthz",status="200"} 1');
  });

  it('starts again from nothing when the registry resets its metrics', async () => {
    const registry = new Registry();
    const metrics = createRequestMetrics();
    metrics.register(registry);
    metrics.observe(health, '/healthz', 'GET', 200, 0.001);
    registry.resetMetrics();
    metrics.observe(health, '/healthz', 'GET', 503, 0.001);
    const text = await registry.metrics();
    expect(text).not.toContain('status="200"');
    expect(text).toContain('http_requests_total{method="GET",route="/healthz",status="503"} 1');
  });
});
