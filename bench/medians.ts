// `npm run bench:medians -- A.json B.json C.json`: the median and the spread (lowest–highest) of each figure over
// several bench reports (bench/results/latest.json copied after each `npm run bench`), since one run on a shared
// machine moves by more than the differences a change makes (bench/README.md).
import { readFileSync } from 'node:fs';
import type { CitusComparison } from './citus.js';
import type { BenchReport } from './report.js';

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** `median (lowest–highest, n runs)`, or `median` alone for one value. */
function spread(values: number[], digits: number): string {
  if (values.length === 0) return '-';
  const format = (value: number) => value.toFixed(digits);
  if (values.length === 1) return format(values[0]!);
  return `${format(median(values))} (${format(Math.min(...values))}–${format(Math.max(...values))})`;
}

/** Collects one number per report under a key, keeping the order in which keys first appear. */
class Series {
  private readonly values = new Map<string, number[]>();
  add(key: string, value: number | null | undefined): void {
    if (value === null || value === undefined || !Number.isFinite(value)) return;
    const list = this.values.get(key) ?? [];
    list.push(value);
    this.values.set(key, list);
  }
  get(key: string): number[] {
    return this.values.get(key) ?? [];
  }
  keys(): string[] {
    return [...this.values.keys()];
  }
}

function main(files: string[]): number {
  if (files.length === 0) {
    process.stderr.write('usage: npm run bench:medians -- REPORT.json [REPORT.json ...] (each a copy of bench/results/latest.json)\n');
    return 2;
  }
  const reports = files.map((file) => JSON.parse(readFileSync(file, 'utf8')) as Partial<BenchReport>);
  const ratio = new Series();
  const cpuRatio = new Series();
  const rate = new Series();
  const goals = new Map<string, string>();
  for (const report of reports) {
    for (const row of report.rows ?? []) {
      const key = `${row.name} [${row.target}]`;
      ratio.add(key, row.ratio);
      cpuRatio.add(key, row.cpuRatio);
      rate.add(key, row.measurement.requestsPerSecond);
      if (row.goalRatio !== null) goals.set(key, `≥ ${row.goalRatio}`);
    }
  }
  const lines = [`${reports.length} reports: ${files.join(', ')}`, '', 'rows: req/s; ratio to the baseline; cpu ratio to the baseline (median, lowest–highest):'];
  for (const key of rate.keys()) {
    const goal = goals.has(key) ? `  goal ${goals.get(key)}` : '';
    lines.push(`  ${key}: ${spread(rate.get(key), 0)} req/s; ${spread(ratio.get(key), 2)} x; cpu ${spread(cpuRatio.get(key), 2)} x${goal}`);
  }

  const comparison = new Series();
  for (const report of reports) for (const item of report.comparisons ?? []) comparison.add(item.name, item.p50Ratio);
  if (comparison.keys().length > 0) lines.push('', 'comparisons (p50 ratios):', ...comparison.keys().map((key) => `  ${key}: ${spread(comparison.get(key), 2)}`));

  const micro = new Series();
  for (const report of reports) for (const item of report.micro ?? []) micro.add(item.name, item.meanMicros);
  if (micro.keys().length > 0) lines.push('', 'micro-benchmarks (mean µs):', ...micro.keys().map((key) => `  ${key}: ${spread(micro.get(key), 1)}`));

  const seconds = new Series();
  const scaleRatio = new Series();
  for (const report of reports) {
    for (const item of report.scale ?? []) {
      seconds.add(item.name, item.serviceSeconds);
      scaleRatio.add(item.name, item.ratio);
    }
  }
  if (seconds.keys().length > 0) {
    lines.push('', 'scale runs: seconds; ratio to the reference (median of each report\'s own median):');
    for (const key of seconds.keys()) lines.push(`  ${key}: ${spread(seconds.get(key), 3)} s; ${spread(scaleRatio.get(key), 2)} x`);
  }

  const citus = new Series();
  for (const report of reports) for (const item of (report.citus ?? []) as CitusComparison[]) citus.add(item.name, item.ratio);
  if (citus.keys().length > 0) lines.push('', 'Citus as a share of PostgreSQL:', ...citus.keys().map((key) => `  ${key}: ${spread(citus.get(key), 2)} x`));

  process.stdout.write(`${lines.join('\n')}\n`);
  return 0;
}

process.exitCode = main(process.argv.slice(2));
