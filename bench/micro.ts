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
  iterations: number;
  warmupIterations: number;
  /** Wall time of the measured loop divided by its iterations. */
  meanMicros: number;
  /** 1 / mean: how many operations one core completes per second when it does nothing else. */
  perSecond: number;
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
    for (let i = 0; i < settings.warmupIterations; i++) await prepared.operation();
    signal.throwIfAborted();
    const samples = new Float64Array(settings.iterations);
    const started = performance.now();
    for (let i = 0; i < settings.iterations; i++) {
      const before = performance.now();
      await prepared.operation();
      samples[i] = performance.now() - before;
    }
    const elapsedMs = performance.now() - started;
    signal.throwIfAborted();
    samples.sort();
    const at = (fraction: number) => samples[Math.min(samples.length - 1, Math.ceil(fraction * samples.length) - 1)]! * 1000;
    const meanMicros = (elapsedMs * 1000) / settings.iterations;
    const goal = benchmark.goalMeanMicros ?? null;
    return {
      name: benchmark.name,
      description: benchmark.description,
      iterations: settings.iterations,
      warmupIterations: settings.warmupIterations,
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
