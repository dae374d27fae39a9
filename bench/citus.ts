// The service on Citus beside the service on PostgreSQL, in the same run (BENCH_CITUS_URL): a database made on the
// coordinator and every worker, migrated and distributed by `db distribute` with its default shard count
// (docs/scaling.md, Running on Citus); the rows and scale runs marked `citus` measured on both; each set beside the other.
import { DEFAULT_SHARD_COUNT } from '../src/db/distribute.js';
import { createCitusDatabase, dropCitusDatabase } from '../test/helpers/citus.js';
import { dropAbandonedBenchDatabases, type BenchDatabase } from './database.js';
import type { ResultRow } from './report.js';
import type { ScaleResult } from './scale.js';
import type { Scenario } from './types.js';

/** The target label of the service on Citus, in the table and the JSON report. */
export const CITUS_TARGET = 'citus';
/** Appended to the name of a scale result measured on Citus. */
export const CITUS_SUFFIX = ' (on Citus)';

export interface CitusComparison {
  /** The row's or scale result's name (on PostgreSQL). */
  name: string;
  /** req/s for a row, seconds for a scale result. */
  unit: 'req/s' | 's';
  postgres: number;
  citus: number;
  /** What Citus reaches as a share of PostgreSQL: req/s on Citus over req/s here; for seconds, here over Citus. */
  ratio: number;
  /** The same from the CPU each service process spent per request (rows only): steadier on a shared machine. */
  cpuRatio: number | null;
  goalRatio: number | null;
  goalMet: boolean | null;
}

/** The `PREFIX<pid>` databases of killed runs, dropped on every node of the cluster (bench/database.ts). */
export function dropAbandonedCitusDatabases(citusUrl: string, prefix: string): Promise<string[]> {
  return dropAbandonedBenchDatabases(citusUrl, prefix, (name) => dropCitusDatabase(citusUrl, name));
}

/** The run's database on the cluster, distributed as a deployment's is (DEFAULT_SHARD_COUNT shards per table). */
export async function createCitusBenchDatabase(citusUrl: string, name: string): Promise<BenchDatabase> {
  await dropCitusDatabase(citusUrl, name);
  const url = await createCitusDatabase(citusUrl, name, { shardCount: DEFAULT_SHARD_COUNT });
  let dropped = false;
  return {
    name,
    url,
    async drop() {
      if (dropped) return;
      dropped = true;
      await dropCitusDatabase(citusUrl, name);
    },
  };
}

const twoDecimals = (value: number) => Math.round(value * 100) / 100;

function compared(name: string, unit: CitusComparison['unit'], postgres: number, citus: number, ratio: number, cpuRatio: number | null, goalRatio?: number): CitusComparison {
  return {
    name,
    unit,
    postgres,
    citus,
    ratio: Math.round(ratio * 1000) / 1000,
    cpuRatio: cpuRatio === null ? null : Math.round(cpuRatio * 1000) / 1000,
    goalRatio: goalRatio ?? null,
    goalMet: goalRatio === undefined ? null : twoDecimals(ratio) >= goalRatio,
  };
}

/** Each row measured on both services, and each scale result run on both, Citus as a share of PostgreSQL. */
export function compareCitus(scenarios: Scenario[], rows: ResultRow[], scale: ScaleResult[]): CitusComparison[] {
  const comparisons: CitusComparison[] = [];
  for (const scenario of scenarios) {
    const here = rows.find((row) => row.target === 'app' && row.name === scenario.name);
    const there = rows.find((row) => row.target === CITUS_TARGET && row.name === scenario.name);
    if (!here || !there || here.measurement.requestsPerSecond === 0) continue;
    const hereCpu = here.measurement.cpuMicrosPerRequest;
    const thereCpu = there.measurement.cpuMicrosPerRequest;
    comparisons.push(
      compared(
        scenario.name,
        'req/s',
        Math.round(here.measurement.requestsPerSecond),
        Math.round(there.measurement.requestsPerSecond),
        there.measurement.requestsPerSecond / here.measurement.requestsPerSecond,
        hereCpu && thereCpu ? hereCpu / thereCpu : null,
        scenario.citus?.goalRatio,
      ),
    );
  }
  for (const there of scale.filter((result) => result.name.endsWith(CITUS_SUFFIX))) {
    const name = there.name.slice(0, -CITUS_SUFFIX.length);
    const here = scale.find((result) => result.name === name);
    if (!here || there.serviceSeconds === 0) continue;
    comparisons.push(compared(name, 's', here.serviceSeconds, there.serviceSeconds, here.serviceSeconds / there.serviceSeconds, null));
  }
  return comparisons;
}

export function formatCitus(comparisons: CitusComparison[]): string[] {
  if (comparisons.length === 0) return [];
  const lines = ['Citus beside PostgreSQL (same run; share of PostgreSQL: req/s on Citus / here, or seconds here / on Citus):'];
  for (const comparison of comparisons) {
    const cpu = comparison.cpuRatio === null ? '' : `, cpu ${comparison.cpuRatio.toFixed(2)} x`;
    const goal = comparison.goalRatio === null ? '' : ` (goal ≥ ${comparison.goalRatio}: ${comparison.goalMet ? 'met' : 'missed'})`;
    lines.push(
      `  ${comparison.name}: ${comparison.ratio.toFixed(2)} x${cpu} ` +
        `(${comparison.postgres} ${comparison.unit} on PostgreSQL, ${comparison.citus} ${comparison.unit} on Citus)${goal}`,
    );
  }
  return lines;
}
