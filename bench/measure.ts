// One autocannon run against one URL, stoppable by an AbortSignal, reduced to the numbers the report shows.
import { readFile } from 'node:fs/promises';
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

/**
 * Loads one server, or several at once (a client spreading its connections round-robin over the servers of one
 * deployment): autocannon takes one URL, so each server gets an instance of its own with its share of the
 * connections, all started together; the counts are summed and the percentiles taken over every response.
 */
export async function runLoad(
  baseUrls: string | string[],
  request: PreparedRequest,
  settings: LoadSettings,
  signal: AbortSignal,
): Promise<Measurement> {
  const urls = typeof baseUrls === 'string' ? [baseUrls] : baseUrls;
  if (settings.connections < urls.length) throw new Error(`${urls.length} servers need at least ${urls.length} connections`);
  const latencies: number[] = [];
  const parts = await Promise.all(
    urls.map((url, index) => {
      // Connection i goes to server i mod n: the shares differ by one at most.
      const connections = Math.floor(settings.connections / urls.length) + (index < settings.connections % urls.length ? 1 : 0);
      return runOne(url, request, { ...settings, connections }, signal, latencies);
    }),
  );
  const sorted = Float64Array.from(latencies).sort();
  const total = latencies.reduce((sum, value) => sum + value, 0);
  const sum = (pick: (part: Measurement) => number) => parts.reduce((acc, part) => acc + pick(part), 0);
  const statusCodes: Record<string, number> = {};
  for (const part of parts) for (const [code, count] of Object.entries(part.statusCodes)) statusCodes[code] = (statusCodes[code] ?? 0) + count;
  return {
    requestsPerSecond: sum((part) => part.requestsPerSecond),
    latencyP50Ms: round(percentile(sorted, 0.5)),
    latencyP99Ms: round(percentile(sorted, 0.99)),
    latencyAverageMs: round(latencies.length ? total / latencies.length : Number.NaN),
    latencyMaxMs: round(percentile(sorted, 1)),
    responses: sum((part) => part.responses),
    status2xx: sum((part) => part.status2xx),
    non2xx: sum((part) => part.non2xx),
    errors: sum((part) => part.errors),
    timeouts: sum((part) => part.timeouts),
    statusCodes,
    durationSeconds: Math.max(...parts.map((part) => part.durationSeconds)),
  };
}

/** One autocannon instance against one server; its response times are appended to `latencies`. */
function runOne(
  baseUrl: string,
  request: PreparedRequest,
  settings: LoadSettings,
  signal: AbortSignal,
  latencies: number[],
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

    const onAbort = () => instance.stop();
    const instance = autocannon(options, (error: unknown, result) => {
      signal.removeEventListener('abort', onAbort);
      if (signal.aborted) return reject(signal.reason);
      if (error) return reject(error instanceof Error ? error : new Error(String(error)));
      const statusCodes: Record<string, number> = {};
      for (const [code, stats] of Object.entries(result.statusCodeStats ?? {})) statusCodes[code] = stats.count ?? 0;
      // The latencies are summarised by runLoad, over every instance's responses.
      resolve({
        requestsPerSecond: result.requests.average,
        latencyP50Ms: Number.NaN,
        latencyP99Ms: Number.NaN,
        latencyAverageMs: Number.NaN,
        latencyMaxMs: Number.NaN,
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

/**
 * CPU seconds a process has used so far (user + system, /proc/PID/stat; null where there is none, e.g. macOS).
 * Per request, it says what a row costs the server itself, which the load of other processes on the machine
 * changes far less than req/s (a busy machine takes cores away; it does not make a request's work larger).
 */
export async function cpuSeconds(pid: number): Promise<number | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // The fields after the command name (which may hold spaces) start at its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name, in clock ticks (100 per second on Linux).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
}
