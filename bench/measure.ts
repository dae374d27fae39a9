// One autocannon run against one URL, stoppable by an AbortSignal, reduced to the numbers the report shows.
import autocannon from 'autocannon';
import type { ScenarioOverrides } from './types.js';

export interface LoadSettings {
  connections: number;
  /** Seconds. */
  duration: number;
}

export interface Measurement {
  /** Mean of the per-second request counts. */
  requestsPerSecond: number;
  /** Over every response (whatever its status), to the microsecond: autocannon's own histogram has 1 ms steps. */
  latencyP50Ms: number;
  latencyP99Ms: number;
  latencyAverageMs: number;
  latencyMaxMs: number;
  /** Responses received during the measured run. */
  responses: number;
  status2xx: number;
  non2xx: number;
  /** Connection errors, timeouts included. */
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  durationSeconds: number;
}

/** A request ready for autocannon: the body already encoded, the content type set. */
export interface PreparedRequest {
  method: NonNullable<ScenarioOverrides['method']>;
  path: string;
  headers: Record<string, string>;
  body: string | undefined;
  requests: autocannon.Request[] | undefined;
}

/** The value below which `fraction` of the sorted samples fall (nearest rank). */
function percentile(sorted: Float64Array, fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1));
  return sorted[rank]!;
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}

export function runLoad(
  baseUrl: string,
  request: PreparedRequest,
  settings: LoadSettings,
  signal: AbortSignal,
): Promise<Measurement> {
  signal.throwIfAborted();
  return new Promise((resolve, reject) => {
    const options: autocannon.Options = {
      url: baseUrl + request.path,
      method: request.method,
      headers: request.headers,
      connections: settings.connections,
      duration: settings.duration,
      // Each autocannon connection keeps its socket: the servers are measured, not TCP set-up.
      pipelining: 1,
      timeout: 10,
    };
    if (request.body !== undefined) options.body = request.body;
    if (request.requests !== undefined) options.requests = request.requests;

    const latencies: number[] = [];
    const onAbort = () => instance.stop();
    const instance = autocannon(options, (error: unknown, result) => {
      signal.removeEventListener('abort', onAbort);
      if (signal.aborted) return reject(signal.reason);
      if (error) return reject(error instanceof Error ? error : new Error(String(error)));
      const statusCodes: Record<string, number> = {};
      for (const [code, stats] of Object.entries(result.statusCodeStats ?? {})) statusCodes[code] = stats.count ?? 0;
      const sorted = Float64Array.from(latencies).sort();
      const total = latencies.reduce((sum, value) => sum + value, 0);
      resolve({
        requestsPerSecond: result.requests.average,
        latencyP50Ms: round(percentile(sorted, 0.5)),
        latencyP99Ms: round(percentile(sorted, 0.99)),
        latencyAverageMs: round(latencies.length ? total / latencies.length : Number.NaN),
        latencyMaxMs: round(percentile(sorted, 1)),
        responses: result['1xx'] + result['2xx'] + result['3xx'] + result['4xx'] + result['5xx'],
        status2xx: result['2xx'],
        non2xx: result.non2xx,
        errors: result.errors,
        timeouts: result.timeouts,
        statusCodes,
        durationSeconds: result.duration,
      });
    });
    instance.on('response', (_client, _statusCode, _bytes, responseTime: number) => latencies.push(responseTime));
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
