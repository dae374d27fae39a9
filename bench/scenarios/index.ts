// Every benchmark scenario, in the order they run: add a file in bench/scenarios/ and list its array here.
import type { Comparison, MicroBenchmark, Scenario } from '../types.js';
import { opsScenarios } from './ops.js';

export const scenarios: Scenario[] = [...opsScenarios];

/** p50 ratios between two rows, printed under the table when both ran. */
export const comparisons: Comparison[] = [];

/** In-process measurements, run after every row (nothing else is measured meanwhile). */
export const microBenchmarks: MicroBenchmark[] = [];
