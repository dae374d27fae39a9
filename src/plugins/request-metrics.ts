// The request counter and latency histogram (http_requests_total, http_request_duration_seconds) kept in plain arrays.
import type { Metric, Registry } from 'prom-client';

export const REQUEST_COUNTER_NAME = 'http_requests_total';
export const REQUEST_DURATION_NAME = 'http_request_duration_seconds';
const REQUEST_COUNTER_HELP = 'HTTP requests answered, by method, route pattern and status code.';
const REQUEST_DURATION_HELP = 'Time from receiving a request to sending its response, by method, route pattern and status code.';
/** Seconds; the README's metrics table names the range (1 ms to 5 s). */
export const REQUEST_DURATION_BUCKETS: readonly number[] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

type RequestLabels = Record<'method' | 'route' | 'status', string>;

/** One (method, route, status): its count, its latencies' sum and how many fell in each bucket (not cumulative). */
interface Series {
  method: string;
  status: number;
  labels: RequestLabels;
  count: number;
  sum: number;
  /** One per bound of REQUEST_DURATION_BUCKETS; latencies above the last are in `count` only. */
  buckets: number[];
}

/** The series of one route label, found by method and status with a short scan (a route answers few of each). */
interface RouteSeries {
  route: string;
  series: Series[];
}

/** A value as prom-client's Registry formats it (the shape its Counter and Histogram hand it). */
interface ExportedValue {
  labels: Record<string, string | number>;
  sharedLabels?: Record<string, string>;
  value: number;
  metricName?: string;
  /** prom-client's histogram carries one per bucket (null: none); kept so the JSON is the same too. */
  exemplar?: null;
}

/**
 * prom-client's Counter and Histogram hash an object of labels on every observation and validate it; at tens of
 * thousands of requests a second that was a measurable part of a request's CPU (bench/README.md). These two are
 * the same metrics kept per route object: an observation is a cached look-up, an increment and a bucket scan. The
 * Registry still formats them (registerMetric, with prom-client's own value shapes), so the scrape is the same text
 * as before: names, help, labels and their order, buckets, and series in the order they first appeared.
 */
export function createRequestMetrics() {
  /** Every series in the order it was first observed: the order prom-client's hash of labels kept. */
  const all: Series[] = [];
  const byRoute = new Map<string, RouteSeries>();
  /** A route's config object (one per route, plugins/route-config.ts) to its series, so a request skips the string look-up. */
  const byConfig = new WeakMap<object, RouteSeries>();

  function routeSeries(config: object, route: string): RouteSeries {
    let found = byConfig.get(config);
    if (found === undefined) {
      // Two configs may share a label (the 404 handlers' `unmatched`): one series for both.
      found = byRoute.get(route);
      if (found === undefined) byRoute.set(route, (found = { route, series: [] }));
      byConfig.set(config, found);
    }
    return found;
  }

  function observe(config: object, route: string, method: string, status: number, seconds: number): void {
    const { series } = routeSeries(config, route);
    let entry: Series | undefined;
    for (let i = 0; i < series.length; i++) {
      const candidate = series[i]!;
      if (candidate.status === status && candidate.method === method) {
        entry = candidate;
        break;
      }
    }
    if (entry === undefined) {
      entry = {
        method,
        status,
        labels: { method, route, status: String(status) },
        count: 0,
        sum: 0,
        buckets: REQUEST_DURATION_BUCKETS.map(() => 0),
      };
      series.push(entry);
      all.push(entry);
    }
    entry.count++;
    entry.sum += seconds;
    // Prometheus buckets are upper bounds, inclusive (`le`).
    for (let i = 0; i < REQUEST_DURATION_BUCKETS.length; i++) {
      if (seconds <= REQUEST_DURATION_BUCKETS[i]!) {
        entry.buckets[i]!++;
        break;
      }
    }
  }

  function counterValues(): ExportedValue[] {
    return all.map((entry) => ({ value: entry.count, labels: entry.labels }));
  }

  /** prom-client's histogram layout: each bucket cumulative with `le` first, then +Inf, `_sum` and `_count`. */
  function histogramValues(): ExportedValue[] {
    const values: ExportedValue[] = [];
    for (const entry of all) {
      let cumulative = 0;
      REQUEST_DURATION_BUCKETS.forEach((bound, index) => {
        cumulative += entry.buckets[index]!;
        values.push({ labels: { le: bound }, sharedLabels: entry.labels, value: cumulative, metricName: `${REQUEST_DURATION_NAME}_bucket`, exemplar: null });
      });
      values.push({ labels: { le: '+Inf' }, sharedLabels: entry.labels, value: entry.count, metricName: `${REQUEST_DURATION_NAME}_bucket`, exemplar: null });
      values.push({ labels: {}, sharedLabels: entry.labels, value: entry.sum, metricName: `${REQUEST_DURATION_NAME}_sum` });
      values.push({ labels: {}, sharedLabels: entry.labels, value: entry.count, metricName: `${REQUEST_DURATION_NAME}_count` });
    }
    return values;
  }

  /** The same values with the shared labels folded into each value's own (prom-client's `get()`, for JSON). */
  function splay(values: ExportedValue[]): ExportedValue[] {
    return values.map(({ labels, sharedLabels, ...rest }) => ({ ...rest, labels: { ...labels, ...sharedLabels } }));
  }

  /** Registers both metrics on `registry`, where the counter and the histogram were before. */
  function register(registry: Registry): void {
    const metric = (name: string, help: string, type: 'counter' | 'histogram', values: () => ExportedValue[], forJson: (values: ExportedValue[]) => ExportedValue[]) => {
      const data = (exported: ExportedValue[]) => ({ name, help, type, values: exported, aggregator: 'sum' as const });
      return {
        name,
        help,
        type,
        aggregator: 'sum',
        get: async () => data(forJson(values())),
        getForPromString: async () => data(values()),
        // Registry.resetMetrics: both metrics start again (they share their series).
        reset: () => {
          all.length = 0;
          for (const route of byRoute.values()) route.series.length = 0;
        },
      };
    };
    // registerMetric takes any object of this shape (prom-client's Registry calls only these members).
    registry.registerMetric(metric(REQUEST_COUNTER_NAME, REQUEST_COUNTER_HELP, 'counter', counterValues, (values) => values) as unknown as Metric);
    registry.registerMetric(metric(REQUEST_DURATION_NAME, REQUEST_DURATION_HELP, 'histogram', histogramValues, splay) as unknown as Metric);
  }

  return { observe, register };
}

export type RequestMetrics = ReturnType<typeof createRequestMetrics>;
