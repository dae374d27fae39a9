// Reading GET /metrics in tests: one sample's value, and the change of a set of samples across an action.
import type { TestApp } from './app.js';

/** The value of one sample line (`name{labels} value`), or undefined when the line is absent. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const present = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([key, value]) => present[key] === value)) return Number(match[3]);
  }
  return undefined;
}

/** The sum of every sample of one metric (all label values), 0 when it has none. */
export function total(text: string, name: string): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{.*\})? (\S+)$/.exec(line);
    if (match && match[1] === name) sum += Number(match[2]);
  }
  return sum;
}

export async function scrape(t: TestApp): Promise<string> {
  const response = await t.app.inject({ method: 'GET', url: '/metrics' });
  if (response.statusCode !== 200) throw new Error(`GET /metrics answered ${response.statusCode}`);
  return response.body;
}

/** A sample to follow: a metric name with the labels that pick one series, or none for the sum of all its series. */
export type Series = [name: string, labels?: Record<string, string>];

/** What each series moved by while `action` ran, keyed `name{k=v,…}`. */
export async function movedBy(t: TestApp, series: Series[], action: () => Promise<unknown>): Promise<Record<string, number>> {
  const read = (text: string) =>
    series.map(([name, labels]) => (labels === undefined ? total(text, name) : (sample(text, name, labels) ?? Number.NaN)));
  const before = read(await scrape(t));
  await action();
  const after = read(await scrape(t));
  return Object.fromEntries(series.map(([name, labels], index) => [keyOf(name, labels), after[index]! - before[index]!]));
}

export function keyOf(name: string, labels?: Record<string, string>): string {
  return labels === undefined ? name : `${name}{${Object.entries(labels).map(([key, value]) => `${key}=${value}`).join(',')}}`;
}
