// The shapes a benchmark scenario and its setup context take; scenario files import only from here.
import type autocannon from 'autocannon';
import type { BaselineName } from './baselines.js';

export type HttpMethod = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS';

/** One HTTP request, repeated by every connection for the whole measured run. */
export interface RequestSpec {
  method: HttpMethod;
  /** Path and query string, relative to the target's base URL. */
  path: string;
  headers?: Record<string, string>;
  /** A string is sent as is; an object is sent as JSON with `content-type: application/json`. */
  body?: string | Record<string, unknown>;
}

/** What `setup` may change: any part of the request, or autocannon's own request sequence for advanced cases. */
export interface ScenarioOverrides extends Partial<RequestSpec> {
  /** Passed to autocannon as `requests` (a cycle of requests, each may have `setupRequest`/`onResponse`). */
  requests?: autocannon.Request[];
}

/** Given to `setup` before the warm-up: where the target listens and how to prepare data for it. */
export interface ScenarioContext {
  /** Base URL of the process the scenario measures, e.g. `http://127.0.0.1:40123`. */
  url: string;
  /** The service under test (same as `url` for scenarios that target it). */
  appUrl: string;
  /** The run's fresh database, already migrated by the service at start. */
  databaseUrl: string;
  /** The service's SECRETS_KEY (hex): a set-up that stores sealed secrets (webhook subscriptions) seals with it. */
  secretsKey: string;
  /**
   * One request with fetch, body parsed as JSON when it is JSON; for logging in, creating fixtures, ... It gives up
   * after `timeoutMs` (default 10 s).
   */
  request(spec: RequestSpec & { url?: string; timeoutMs?: number }): Promise<{ status: number; headers: Headers; body: unknown }>;
  /** Runs `node dist/cli.js ...args` against the run's database and resolves its standard output. */
  cli(args: string[], input?: string): Promise<string>;
}

/** A named request to measure, with optional preparation. */
export interface MeasuredRequest extends RequestSpec {
  /** Short and unique: it names the table row and the JSON entry. */
  name: string;
  /** Runs once before the warm-up, e.g. to obtain an OAuth token; its result overrides the request above. */
  setup?(context: ScenarioContext): Promise<ScenarioOverrides | void>;
  /**
   * Processes of the service the load is spread over (default 1; at most 2): with 2 the bench starts a second one
   * on the same database and environment, and the connections alternate between the two (bench/run.ts).
   */
  instances?: 1 | 2;
  /**
   * Measured a second time on the service on Citus when BENCH_CITUS_URL is set (bench/citus.ts), with its own set-up
   * there, and set beside this row: `goalRatio` is what the row on Citus aims for (at least) as a share of its req/s
   * on PostgreSQL in the same run.
   */
  citus?: { goalRatio?: number };
}

/** A request against the service under test, compared with one baseline measured in the same run. */
export interface Scenario extends MeasuredRequest {
  /** The baseline whose req/s this scenario's req/s is divided by (a key of `baselines` in `bench/baselines.ts`). */
  baseline: BaselineName;
  /** The ratio to the baseline this row aims for (at least); shown as met or missed, never asserted. */
  goalRatio?: number;
}

/**
 * The p50 latency of one row divided by that of another row of the same run, e.g. the same request at two table
 * sizes. Printed under the table when both rows ran.
 */
export interface Comparison {
  name: string;
  /** Scenario names. */
  numerator: string;
  denominator: string;
  /** The ratio this comparison aims for (at most); shown as met or missed, never asserted. */
  goalAtMost?: number;
}

/** One operation timed in-process, many times in a row (no HTTP): see `bench/micro.ts`. */
export interface MicroBenchmark {
  /** Short and unique; BENCH_ONLY selects it like a scenario. */
  name: string;
  /** What one operation is, for the report. */
  description: string;
  /** The mean cost per operation this benchmark aims for (below), in microseconds; never asserted. */
  goalMeanMicros?: number;
  /**
   * How many items one call of `operation` handles at once (default 1), e.g. a download's credentials signed
   * together: the runner then makes iterations / itemsPerCall calls and reports the cost per item.
   */
  itemsPerCall?: number;
  /** Builds what the operation needs (untimed); the runner then times `operation` and finally calls `close`. */
  prepare(context: { databaseUrl: string }): Promise<{ operation(): Promise<unknown>; close(): Promise<void> }>;
}
