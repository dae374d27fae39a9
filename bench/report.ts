// The bench report: a plain-text table for the terminal and a JSON document for bench/results/.
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Measurement } from './measure.js';
import type { ScaleResult } from './scale.js';
import type { MicroResult } from './micro.js';
import type { CitusComparison } from './citus.js';

export interface ResultRow {
  name: string;
  /** `app` for the service under test, `citus` for it on Citus (bench/citus.ts), `baseline:NAME` for a baseline's reference request. */
  target: string;
  baseline: string;
  method: string;
  path: string;
  measurement: Measurement & {
    /** CPU time (user + system) the server's processes used in the measured run, per response; null where unknown. */
    cpuMicrosPerRequest: number | null;
  };
  /** req/s divided by the baseline's req/s in this run; null when the baseline was not measured. */
  ratio: number | null;
  /**
   * The baseline's CPU µs per request divided by this row's, in this run: the req/s ratio the row would reach where
   * both are bound by their own process's CPU, and far steadier than it on a machine shared with other work.
   */
  cpuRatio: number | null;
  /** The ratio the scenario aims for (at least), and whether this run reached it; null without a goal. */
  goalRatio: number | null;
  goalMet: boolean | null;
  /** Anything odd seen while measuring: an unexpected status in the probe request, server output, ... */
  notes: string[];
}

export interface BenchReport {
  startedAt: string;
  finishedAt: string;
  commit: string | null;
  /** Tracked files differed from the commit: the numbers are for uncommitted code. */
  dirty: boolean;
  environment: {
    node: string;
    platform: string;
    cpus: number;
    cpuModel: string;
    /** One-minute load average before the first row: well above 0, other processes were competing. */
    loadAverageBefore: number;
  };
  settings: {
    connections: number;
    durationSeconds: number;
    warmupSeconds: number;
    microIterations: number;
    microWarmupIterations: number;
  };
  rows: ResultRow[];
  /** p50 of one row over p50 of another (e.g. one page at two table sizes). */
  comparisons: ComparisonResult[];
  /** In-process micro-benchmarks. */
  micro: MicroResult[];
  /** Large single operations next to bare SQL (bench/scale.ts). */
  scale: ScaleResult[];
  /** The rows and scale runs measured on Citus too (BENCH_CITUS_URL), as a share of PostgreSQL; empty without it. */
  citus: CitusComparison[];
}

export interface ComparisonResult {
  name: string;
  numerator: string;
  denominator: string;
  numeratorP50Ms: number;
  denominatorP50Ms: number;
  /** numeratorP50Ms / denominatorP50Ms. */
  p50Ratio: number;
  goalAtMost: number | null;
  goalMet: boolean | null;
}

function fixed(value: number, digits: number): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '-';
}

export function formatTable(rows: ResultRow[]): string {
  const header = ['scenario', 'target', 'req/s', 'p50 ms', 'p99 ms', 'err/non-2xx', 'cpu µs/req', 'vs baseline', 'cpu vs baseline', 'goal'];
  const body = rows.map((row) => {
    const m = row.measurement;
    return [
      row.name,
      row.target,
      fixed(m.requestsPerSecond, 0),
      fixed(m.latencyP50Ms, 2),
      fixed(m.latencyP99Ms, 2),
      `${m.errors}/${m.non2xx}`,
      m.cpuMicrosPerRequest === null ? '-' : String(m.cpuMicrosPerRequest),
      row.ratio === null ? '-' : `${fixed(row.ratio, 2)} x ${row.baseline}`,
      row.cpuRatio === null ? '-' : `${fixed(row.cpuRatio, 2)} x`,
      row.goalRatio === null ? '' : `≥ ${fixed(row.goalRatio, 2)} ${row.goalMet ? 'met' : 'missed'}`,
    ];
  });
  const widths = header.map((title, column) => Math.max(title.length, ...body.map((cells) => cells[column]!.length)));
  // Text columns left-aligned, numbers right-aligned.
  const left = (column: number) => column < 2 || column === header.length - 1;
  const align = (cells: string[]) =>
    cells
      .map((cell, column) => (left(column) ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!)))
      .join('  ')
      .trimEnd();
  const rule = widths.map((width) => '-'.repeat(width)).join('  ');
  return [align(header), rule, ...body.map(align)].join('\n');
}

function goalText(goal: string, met: boolean | null): string {
  return met === null ? '' : ` (goal ${goal}: ${met ? 'met' : 'missed'})`;
}

/** One line per comparison whose two rows both ran. */
export function formatComparisons(comparisons: ComparisonResult[]): string[] {
  return comparisons.map(
    (comparison) =>
      `${comparison.name}: ${fixed(comparison.p50Ratio, 2)} ` +
      `(${fixed(comparison.numeratorP50Ms, 2)} ms / ${fixed(comparison.denominatorP50Ms, 2)} ms)` +
      goalText(`≤ ${comparison.goalAtMost}`, comparison.goalMet),
  );
}

/** The micro-benchmarks section: mean cost per operation and operations per second. */
export function formatMicro(results: MicroResult[]): string[] {
  if (results.length === 0) return [];
  const lines = ['micro-benchmarks (in-process, one operation at a time):'];
  for (const result of results) {
    const batch = result.itemsPerCall > 1;
    const unit = batch ? 'item' : 'call';
    lines.push(
      `  ${result.name}: ${fixed(result.meanMicros, 1)} µs per ${unit}, ${result.perSecond} ${unit}s/s ` +
        `(p50 ${fixed(result.p50Micros, 1)} µs, p99 ${fixed(result.p99Micros, 1)} µs, ${result.iterations} ${unit}s ` +
        `after ${result.warmupIterations} warm-up${batch ? `, ${result.itemsPerCall} at once per call` : ''})` +
        goalText(`< ${result.goalMeanMicros} µs`, result.goalMet),
      `    ${result.description}`,
    );
  }
  return lines;
}

export async function writeReport(path: string, report: BenchReport): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, `${JSON.stringify(report, null, 2)}\n`);
}
