// Runs an in-process micro-benchmark: its operation awaited once at a time, after a warm-up, each call timed.
import { performance } from 'node:perf_hooks';
import type { MicroBenchmark } from './types.js';

export interface MicroSettings {
  warmupIterations: number;
  iterations: number;
}

export interface MicroResult {
  name: string;
  description: string;
  /** Items timed (calls × itemsPerCall). */
  iterations: number;
  warmupIterations: number;
  /** Items one call handled at once (1: one operation per call). */
  itemsPerCall: number;
  /** Wall time of the measured loop divided by its items. */
  meanMicros: number;
  /** 1 / mean: how many items the process completes per second when it does nothing else. */
  perSecond: number;
  /** Of the calls, divided by itemsPerCall. */
  p50Micros: number;
  p99Micros: number;
  goalMeanMicros: number | null;
  goalMet: boolean | null;
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

export async function runMicro(
  benchmark: MicroBenchmark,
  context: { databaseUrl: string },
  settings: MicroSettings,
  signal: AbortSignal,
): Promise<MicroResult> {
  const prepared = await benchmark.prepare(context);
  try {
    // A call handling several items counts for that many: the item counts stay close to the settings.
    const items = benchmark.itemsPerCall ?? 1;
    const warmupCalls = Math.ceil(settings.warmupIterations / items);
    const calls = Math.max(1, Math.ceil(settings.iterations / items));
    for (let i = 0; i < warmupCalls; i++) await prepared.operation();
    signal.throwIfAborted();
    const samples = new Float64Array(calls);
    const started = performance.now();
    for (let i = 0; i < calls; i++) {
      const before = performance.now();
      await prepared.operation();
      samples[i] = performance.now() - before;
    }
    const elapsedMs = performance.now() - started;
    signal.throwIfAborted();
    samples.sort();
    const at = (fraction: number) => (samples[Math.min(samples.length - 1, Math.ceil(fraction * samples.length) - 1)]! * 1000) / items;
    const meanMicros = (elapsedMs * 1000) / (calls * items);
    const goal = benchmark.goalMeanMicros ?? null;
    return {
      name: benchmark.name,
      description: benchmark.description,
      iterations: calls * items,
      warmupIterations: warmupCalls * items,
      itemsPerCall: items,
      meanMicros: round(meanMicros),
      perSecond: Math.round(1e6 / meanMicros),
      p50Micros: round(at(0.5)),
      p99Micros: round(at(0.99)),
      goalMeanMicros: goal,
      goalMet: goal === null ? null : meanMicros < goal,
    };
  } finally {
    await prepared.close();
  }
}
