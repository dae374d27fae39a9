// The README's reference sections stay true: the configuration table is generated from the config schema, and the
// metrics table lists exactly the metrics /metrics serves, so neither a variable nor a metric goes undocumented.
import { readFileSync } from 'node:fs';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configTable } from '../scripts/config-table.js';
import { buildTestApp, type TestApp } from './helpers/app.js';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

interface MetricShape {
  type: string;
  labels: string[];
}

/** The rows of the README's metrics table (`| \`name\` | type | \`label\`, … | meaning |`), by metric name. */
function documentedMetrics(): Map<string, MetricShape> {
  const start = readme.indexOf('\n### Metrics\n');
  expect(start, 'README.md has a "### Metrics" section').toBeGreaterThanOrEqual(0);
  const end = readme.indexOf('\n#', start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  const rows = new Map<string, MetricShape>();
  for (const [, name, type, labels] of section.matchAll(/^\| `([a-zA-Z_:][a-zA-Z0-9_:]*)` \| (\w+) \| ([^|]*) \|.*\|$/gm)) {
    rows.set(name!, { type: type!, labels: [...labels!.matchAll(/`(\w+)`/g)].map((match) => match[1]!).sort() });
  }
  return rows;
}

/** Each metric family of a Prometheus text answer with its type and the label names its samples carry. */
function servedMetrics(text: string): Map<string, MetricShape> {
  const families = new Map<string, MetricShape>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) families.set(name!, { type: type!, labels: [] });
  for (const [, sample, labels] of text.matchAll(/^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} \S+$/gm)) {
    // Histogram samples are NAME_bucket, NAME_sum and NAME_count; `le` is the bucket, not a label of the family.
    const family = families.get(sample!) ?? families.get(sample!.replace(/_(bucket|sum|count)$/, ''));
    if (!family) continue;
    for (const [, label] of labels!.matchAll(/(\w+)="/g)) {
      if (label !== 'le' && !family.labels.includes(label!)) family.labels.push(label!);
    }
  }
  for (const family of families.values()) family.labels.sort();
  return families;
}

describe('README', () => {
  it('holds the configuration table generated from the schema (npx tsx scripts/config-table.ts)', () => {
    expect(readme).toContain(configTable());
  });
});

describe('README metrics table', () => {
  let t: TestApp;
  let served: Map<string, MetricShape>;
  let defaults: Set<string>;

  beforeAll(async () => {
    t = await buildTestApp();
    // A few requests, so that every labelled metric has samples to read its label names from.
    for (const url of ['/healthz', '/readyz', '/operatorapi/tickets', '/no/such/path']) await t.app.inject({ method: 'GET', url });
    const response = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(response.statusCode).toBe(200);
    served = servedMetrics(response.body);
    // prom-client's default collector, which the README describes by its name prefixes rather than row by row.
    const registry = new Registry();
    collectDefaultMetrics({ register: registry });
    defaults = new Set((await registry.getMetricsAsJSON()).map((metric) => metric.name));
  });
  afterAll(async () => {
    await t.close();
  });

  it('lists every metric the service registers, with its type and labels, and nothing else', () => {
    const own = new Map([...served].filter(([name]) => !defaults.has(name)));
    expect(own.size).toBeGreaterThan(0);
    expect(Object.fromEntries(documentedMetrics()), 'the README metrics table, against GET /metrics').toEqual(Object.fromEntries(own));
  });

  it('names the default process metrics by the prefixes it gives them (process_*, nodejs_*)', () => {
    const servedDefaults = [...served.keys()].filter((name) => defaults.has(name));
    expect(servedDefaults.length).toBeGreaterThan(0);
    expect(servedDefaults.filter((name) => !/^(process|nodejs)_/.test(name))).toEqual([]);
  });
});
