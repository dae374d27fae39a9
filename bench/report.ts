// The bench report: a plain-text table for the terminal and a JSON document for bench/results/.
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Measurement } from './measure.js';

export interface ResultRow {
  name: string;
  /** `app` for the service under test, `baseline:NAME` for a baseline's reference request. */
  target: string;
  baseline: string;
  method: string;
  path: string;
  measurement: Measurement;
  /** req/s divided by the baseline's req/s in this run; null when the baseline was not measured. */
  ratio: number | null;
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
  settings: { connections: number; durationSeconds: number; warmupSeconds: number };
  rows: ResultRow[];
}

function fixed(value: number, digits: number): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '-';
}

export function formatTable(rows: ResultRow[]): string {
  const header = ['scenario', 'target', 'req/s', 'p50 ms', 'p99 ms', 'err/non-2xx', 'vs baseline'];
  const body = rows.map((row) => {
    const m = row.measurement;
    return [
      row.name,
      row.target,
      fixed(m.requestsPerSecond, 0),
      fixed(m.latencyP50Ms, 2),
      fixed(m.latencyP99Ms, 2),
      `${m.errors}/${m.non2xx}`,
      row.ratio === null ? '-' : `${fixed(row.ratio, 2)} x ${row.baseline}`,
    ];
  });
  const widths = header.map((title, column) => Math.max(title.length, ...body.map((cells) => cells[column]!.length)));
  // Text columns left-aligned, numbers right-aligned.
  const align = (cells: string[]) =>
    cells.map((cell, column) => (column < 2 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  ');
  const rule = widths.map((width) => '-'.repeat(width)).join('  ');
  return [align(header), rule, ...body.map(align)].join('\n');
}

export async function writeReport(path: string, report: BenchReport): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, `${JSON.stringify(report, null, 2)}\n`);
}
