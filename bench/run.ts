// `npm run bench`: build, start the service and its baselines on a fresh database, measure each scenario in turn.
import { execFileSync, type ExecFileSyncOptionsWithStringEncoding } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { baselines, type BaselineName } from './baselines.js';
import { freePort } from '../test/helpers/process.js';
import { captureCommand, ChildServer, runCommand } from './children.js';
import { CITUS_SUFFIX, CITUS_TARGET, compareCitus, createCitusBenchDatabase, dropAbandonedCitusDatabases, formatCitus } from './citus.js';
import { createBenchDatabase, dropAbandonedBenchDatabases } from './database.js';
import { cpuSeconds, runLoad, type LoadSettings, type PreparedRequest } from './measure.js';
import { runMicro, type MicroResult } from './micro.js';
import { formatScale, runScaleBenchmarks, type ScaleResult, type ScaleRun } from './scale.js';
import {
  formatComparisons,
  formatMicro,
  formatTable,
  writeReport,
  type BenchReport,
  type ComparisonResult,
  type ResultRow,
} from './report.js';
import { comparisons, microBenchmarks, scaleRuns, scenarios } from './scenarios/index.js';
import type { MeasuredRequest, MicroBenchmark, RequestSpec, Scenario, ScenarioContext } from './types.js';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const resultsPath = fileURLToPath(new URL('./results/latest.json', import.meta.url));
const databasePrefix = 'acs_bench_';
/** The Node flags `npm start` and the Dockerfile run the service with (bench/README.md, Node flags): measured as deployed. */
const SERVICE_NODE_FLAGS = ['--max-semi-space-size=64'];

interface Settings {
  connections: number;
  durationSeconds: number;
  warmupSeconds: number;
  adminUrl: string;
  /** Case-insensitive substrings of scenario names; empty runs them all. */
  only: string[];
  readyTimeoutMs: number;
  microIterations: number;
  /** How often each scale run (100k-ticket grant, joins, phone downloads, full syncs) repeats; the median is reported; 0 runs none. */
  scaleRuns: number;
  microWarmupIterations: number;
  /** A Citus coordinator's maintenance database: the rows and scale runs marked `citus` run there too (bench/citus.ts). */
  citusUrl: string | null;
}

class UsageError extends Error {}

function integer(env: NodeJS.ProcessEnv, key: string, fallback: number, minimum: number): number {
  const raw = env[key];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < minimum) throw new UsageError(`${key} must be an integer >= ${minimum}`);
  return value;
}

function readSettings(env: NodeJS.ProcessEnv): Settings {
  return {
    connections: integer(env, 'BENCH_CONNECTIONS', 10, 1),
    durationSeconds: integer(env, 'BENCH_DURATION', 5, 1),
    warmupSeconds: integer(env, 'BENCH_WARMUP', 1, 0),
    adminUrl: env.BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres',
    only: (env.BENCH_ONLY ?? '')
      .split(',')
      .map((part) => part.trim().toLowerCase())
      .filter(Boolean),
    readyTimeoutMs: integer(env, 'BENCH_READY_TIMEOUT_MS', 30_000, 100),
    microIterations: integer(env, 'BENCH_MICRO_ITERATIONS', 5000, 1),
    scaleRuns: integer(env, 'BENCH_SCALE_RUNS', 3, 0),
    microWarmupIterations: integer(env, 'BENCH_MICRO_WARMUP', 1000, 0),
    citusUrl: env.BENCH_CITUS_URL || null,
  };
}

function log(message: string): void {
  process.stderr.write(`[bench] ${message}\n`);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function gitCommit(): { commit: string | null; dirty: boolean } {
  try {
    const options: ExecFileSyncOptionsWithStringEncoding = {
      cwd: repoRoot,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    };
    const commit = execFileSync('git', ['rev-parse', 'HEAD'], options).trim();
    const status = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], options);
    return { commit, dirty: status.trim() !== '' };
  } catch {
    return { commit: null, dirty: false };
  }
}

/** Encodes an object body as JSON (setting its content type) and applies a scenario's overrides. */
function prepare(base: RequestSpec, overrides: Partial<RequestSpec> & { requests?: PreparedRequest['requests'] }) {
  const spec = { ...base, ...overrides, headers: { ...base.headers, ...overrides.headers } };
  const headers: Record<string, string> = { ...spec.headers };
  let body: string | undefined;
  if (typeof spec.body === 'string') body = spec.body;
  else if (spec.body !== undefined) {
    body = JSON.stringify(spec.body);
    if (!Object.keys(headers).some((name) => name.toLowerCase() === 'content-type')) {
      headers['content-type'] = 'application/json';
    }
  }
  const prepared: PreparedRequest = {
    method: spec.method,
    path: spec.path,
    headers,
    body,
    requests: overrides.requests,
  };
  return prepared;
}

async function fetchOnce(url: string, request: PreparedRequest, timeoutMs = 10_000) {
  const init: RequestInit = { method: request.method, headers: request.headers, signal: AbortSignal.timeout(timeoutMs) };
  if (request.body !== undefined) init.body = request.body;
  const response = await fetch(url + request.path, init);
  const text = await response.text();
  let body: unknown = text;
  if ((response.headers.get('content-type') ?? '').includes('json') && text !== '') {
    try {
      body = JSON.parse(text);
    } catch {
      // Not JSON after all: keep the text.
    }
  }
  return { status: response.status, headers: response.headers, body, text };
}

interface Target {
  label: string;
  server: ChildServer;
  /** More processes of the same service on the same database: a row with `instances: 2` spreads its load over them. */
  replicas?: ChildServer[];
}

async function totalCpuSeconds(servers: ChildServer[]): Promise<number | null> {
  const each = await Promise.all(servers.map((server) => cpuSeconds(server.pid)));
  return each.some((value) => value === null) ? null : each.reduce((sum: number, value) => sum + value!, 0);
}

async function measureRequest(
  request: MeasuredRequest,
  target: Target,
  context: Omit<ScenarioContext, 'url'>,
  settings: Settings,
  signal: AbortSignal,
): Promise<{ prepared: PreparedRequest; measurement: ResultRow['measurement']; notes: string[] }> {
  const notes: string[] = [];
  const overrides = (await request.setup?.({ ...context, url: target.server.url })) ?? {};
  const prepared = prepare(request, overrides);

  // One request first: a scenario that only collects 401s or 404s would otherwise pass as a fast one.
  if (prepared.requests === undefined) {
    const probe = await fetchOnce(target.server.url, prepared);
    if (probe.status < 200 || probe.status > 299) {
      notes.push(`probe request answered ${probe.status}: ${probe.text.slice(0, 200)}`);
    }
  }

  const printedBefore = target.server.printed().lines;
  const load = (seconds: number): LoadSettings => ({ connections: settings.connections, duration: seconds });
  // `instances: 2`: every process of the service, each with its share of the connections (runLoad).
  const servers = (request.instances ?? 1) > 1 ? [target.server, ...(target.replicas ?? [])] : [target.server];
  if (servers.length !== (request.instances ?? 1)) throw new Error(`${request.name}: ${request.instances} instances asked, ${servers.length} running`);
  const urls = servers.map((server) => server.url);
  if (settings.warmupSeconds > 0) {
    await runLoad(urls, prepared, load(settings.warmupSeconds), signal);
    for (const server of servers) server.assertRunning();
  }
  const cpuBefore = await totalCpuSeconds(servers);
  const measured = await runLoad(urls, prepared, load(settings.durationSeconds), signal);
  const cpuAfter = await totalCpuSeconds(servers);
  for (const server of servers) server.assertRunning();
  const measurement: ResultRow['measurement'] = {
    ...measured,
    cpuMicrosPerRequest:
      cpuBefore === null || cpuAfter === null || measured.responses === 0
        ? null
        : Math.round(((cpuAfter - cpuBefore) * 1e6) / measured.responses),
  };

  const printed = target.server.printed();
  if (printed.lines > printedBefore) {
    const last = (printed.tail.split('\n').pop() ?? '').slice(0, 300);
    notes.push(`${target.label} printed ${printed.lines - printedBefore} log line(s); the last: ${last}`);
  }
  if (measurement.status2xx === 0) notes.push('no 2xx response at all: nothing meaningful was measured');
  return { prepared, measurement, notes };
}

interface Selection {
  scenarios: Scenario[];
  micro: MicroBenchmark[];
  scale: ScaleRun[];
}

/** What BENCH_ONLY selects; a message when it selects nothing or two items share a name. */
function select(settings: Settings): Selection | string {
  const isSelected = (name: string) =>
    settings.only.length === 0 || settings.only.some((part) => name.toLowerCase().includes(part));
  const selection: Selection = {
    scenarios: scenarios.filter((scenario) => isSelected(scenario.name)),
    micro: microBenchmarks.filter((benchmark) => isSelected(benchmark.name)),
    // `scale` (or a part of it) selects every scale run, as before they had names.
    // BENCH_SCALE_RUNS=0: the rows and micro-benchmarks alone, e.g. for more runs of them than of the long scale runs.
    scale: settings.scaleRuns === 0 ? [] : isSelected('scale') ? scaleRuns : scaleRuns.filter((run) => isSelected(run.name)),
  };
  if (selection.scenarios.length === 0 && selection.micro.length === 0 && selection.scale.length === 0) {
    const all = [...scenarios, ...microBenchmarks, ...scaleRuns].map((item) => item.name).concat('scale');
    return `BENCH_ONLY matches none of: ${all.join(', ')}`;
  }
  const names = [...selection.scenarios, ...selection.micro, ...selection.scale].map((item) => item.name);
  const duplicate = names.find((name, index) => names.indexOf(name) !== index);
  return duplicate ? `two scenarios are named ${JSON.stringify(duplicate)}` : selection;
}

/** The first ctrl-c (or SIGTERM) aborts the run and cleans up; a second one, later than its echo, exits at once. */
function abortOnSignals(controller: AbortController): void {
  let firstSignalAt = 0;
  const onSignal = (name: NodeJS.Signals) => {
    if (firstSignalAt === 0) {
      firstSignalAt = Date.now();
      log(`${name}: stopping and cleaning up (press again to exit at once)`);
      controller.abort(new Error(`interrupted by ${name}`));
      return;
    }
    // tsx relays a ctrl-c the process already got from the terminal when a busy event loop acknowledges it late
    // (30 ms): a repeat within a second is that echo, not a second ctrl-c.
    if (Date.now() - firstSignalAt < 1000) return;
    // The exit handler in children.ts kills what is still running; the next run drops the database.
    log(`${name} again: exiting now (the database ${databasePrefix}${process.pid} may remain until the next run)`);
    process.exit(130);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}

type Cleanups = { label: string; run: () => Promise<void> }[];

interface Servers {
  app: Target;
  baselines: Map<BaselineName, Target>;
  context: Omit<ScenarioContext, 'url'>;
  /** The service on a Citus database, with the context its rows' set-ups use; only with BENCH_CITUS_URL. */
  citus: { target: Target; context: Omit<ScenarioContext, 'url'> } | null;
}

/** The run's database, the service on it and every baseline the selected scenarios name; each registers its cleanup. */
async function startServers(settings: Settings, selection: Selection, signal: AbortSignal, cleanups: Cleanups): Promise<Servers> {
  const abandoned = await dropAbandonedBenchDatabases(settings.adminUrl, databasePrefix);
  if (abandoned.length > 0) log(`dropped databases of killed runs: ${abandoned.join(', ')}`);
  const database = await createBenchDatabase(settings.adminUrl, `${databasePrefix}${process.pid}`);
  cleanups.push({ label: `drop database ${database.name}`, run: () => database.drop() });
  log(`database ${database.name} created`);
  const dataDir = await mkdtemp(join(tmpdir(), 'acs-bench-'));
  cleanups.push({ label: `remove ${dataDir}`, run: () => rm(dataDir, { recursive: true, force: true }) });

  const appPort = await freePort();
  const appEnv: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(appPort),
    HOST: '127.0.0.1',
    PUBLIC_URL: `http://127.0.0.1:${appPort}`,
    DATABASE_URL: database.url,
    LOG_LEVEL: 'warn',
    SECRETS_KEY: randomBytes(32).toString('hex'),
    DATA_DIR: dataDir,
    // One client IP sends everything: the per-IP limit on the OAuth endpoints would turn the runs into 429s.
    TOKEN_RATE_LIMIT_PER_MINUTE: process.env.TOKEN_RATE_LIMIT_PER_MINUTE || '1000000000',
    // One client sends every Operator API request of a row: its per-client limit would turn them into 429s too.
    API_RATE_LIMIT_PER_MINUTE: process.env.API_RATE_LIMIT_PER_MINUTE || '1000000000',
    // The claim rows redeem hundreds of links from one address: its per-address limit is off (0) unless set.
    CLAIM_RATE_LIMIT_PER_MINUTE: process.env.CLAIM_RATE_LIMIT_PER_MINUTE || '0',
    // The access-log ingestion run stores 100 uploads of 1,000 entries for one lock within seconds, each run: far
    // beyond a lock's per-minute budget (docs/api-reference.md 8.5), which would answer 429 from the second upload.
    ACCESS_LOG_ENTRIES_PER_LOCK_PER_MINUTE: process.env.ACCESS_LOG_ENTRIES_PER_LOCK_PER_MINUTE || '1000000',
    // The webhook rows deliver to a receiver in the bench process, on 127.0.0.1 over http.
    WEBHOOK_ALLOW_INSECURE: 'true',
  };
  // The bench speaks plain HTTP.
  delete appEnv.TLS_CERT_FILE;
  delete appEnv.TLS_KEY_FILE;

  const common = { cwd: repoRoot, readyTimeoutMs: settings.readyTimeoutMs, signal };
  // BENCH_CPU_PROFILE=DIR: every Node server of the run writes a V8 CPU profile there when it stops (open it in Chrome
  // DevTools); its file name carries the process id, which is logged with each server.
  const profileArgs = process.env.BENCH_CPU_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROFILE}`] : [];
  log(`starting the service on port ${appPort}`);
  const appServer = await ChildServer.start({
    ...common,
    label: 'app',
    command: process.execPath,
    args: [...profileArgs, ...SERVICE_NODE_FLAGS, 'dist/server.js'],
    env: appEnv,
    port: appPort,
    readyPath: '/readyz',
  });
  cleanups.push({ label: 'stop app', run: () => appServer.stop() });
  if (profileArgs.length > 0) log(`app: pid ${appServer.pid}`);

  // A second process of the service on the same database, only when a selected row spreads its load over two: the
  // same environment (keys, secrets, PUBLIC_URL: one deployment behind one address, so either accepts the other's
  // tokens), its own port.
  const replicas: ChildServer[] = [];
  if (selection.scenarios.some((scenario) => (scenario.instances ?? 1) > 1)) {
    const port = await freePort();
    log(`starting a second process of the service on port ${port}`);
    const replica = await ChildServer.start({
      ...common,
      label: 'app#2',
      command: process.execPath,
      args: [...profileArgs, ...SERVICE_NODE_FLAGS, 'dist/server.js'],
      env: { ...appEnv, PORT: String(port) },
      port,
      readyPath: '/readyz',
    });
    cleanups.push({ label: 'stop app#2', run: () => replica.stop() });
    replicas.push(replica);
  }

  const baselineTargets = new Map<BaselineName, Target>();
  for (const name of new Set(selection.scenarios.map((scenario) => scenario.baseline))) {
    const definition = baselines[name];
    const port = await freePort();
    const launch = definition.launch({ databaseUrl: database.url });
    const label = `baseline:${name}`;
    log(`starting ${label} on port ${port} (${definition.description})`);
    const server = await ChildServer.start({
      ...common,
      label,
      command: launch.command,
      args: launch.command === process.execPath ? [...profileArgs, ...launch.args] : launch.args,
      env: { ...process.env, ...launch.env, PORT: String(port), HOST: '127.0.0.1' },
      port,
      readyPath: definition.readyPath,
    });
    cleanups.push({ label: `stop ${label}`, run: () => server.stop() });
    if (profileArgs.length > 0) log(`${label}: pid ${server.pid}`);
    baselineTargets.set(name, { label, server });
  }

  const citus = settings.citusUrl === null ? null : await startCitusService(settings.citusUrl, appEnv, common, cleanups);
  return {
    app: { label: 'app', server: appServer, replicas },
    baselines: baselineTargets,
    context: serviceContext(appServer, appEnv, database.url),
    citus,
  };
}

/** What a scenario's set-up is given for one service: its URL, its database, its command line. */
function serviceContext(server: ChildServer, env: NodeJS.ProcessEnv, databaseUrl: string): Omit<ScenarioContext, 'url'> {
  return {
    appUrl: server.url,
    databaseUrl,
    secretsKey: env.SECRETS_KEY!,
    async request(spec) {
      const { status, headers, body } = await fetchOnce(spec.url ?? server.url, prepare(spec, {}), spec.timeoutMs);
      return { status, headers, body };
    },
    cli: (args, input) =>
      captureCommand(process.execPath, ['dist/cli.js', ...args], {
        cwd: repoRoot,
        env,
        ...(input === undefined ? {} : { input }),
      }),
  };
}

/**
 * The service a second time, on a distributed database on the Citus cluster at `citusUrl`, with the same environment
 * as the one on PostgreSQL but its own port and data directory (bench/citus.ts).
 */
async function startCitusService(
  citusUrl: string,
  appEnv: NodeJS.ProcessEnv,
  common: { cwd: string; readyTimeoutMs: number; signal: AbortSignal },
  cleanups: Cleanups,
): Promise<NonNullable<Servers['citus']>> {
  const prefix = `${databasePrefix}citus_`;
  const abandoned = await dropAbandonedCitusDatabases(citusUrl, prefix);
  if (abandoned.length > 0) log(`dropped Citus databases of killed runs: ${abandoned.join(', ')}`);
  const database = await createCitusBenchDatabase(citusUrl, `${prefix}${process.pid}`);
  cleanups.push({ label: `drop Citus database ${database.name}`, run: () => database.drop() });
  log(`Citus database ${database.name} created and distributed`);
  const dataDir = await mkdtemp(join(tmpdir(), 'acs-bench-citus-'));
  cleanups.push({ label: `remove ${dataDir}`, run: () => rm(dataDir, { recursive: true, force: true }) });
  const port = await freePort();
  const env = { ...appEnv, PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, DATABASE_URL: database.url, DATA_DIR: dataDir };
  log(`starting the service on Citus on port ${port}`);
  const server = await ChildServer.start({
    ...common,
    label: CITUS_TARGET,
    command: process.execPath,
    args: [...SERVICE_NODE_FLAGS, 'dist/server.js'],
    env,
    port,
    readyPath: '/readyz',
  });
  cleanups.push({ label: 'stop the service on Citus', run: () => server.stop() });
  return { target: { label: CITUS_TARGET, server }, context: serviceContext(server, env, database.url) };
}

/** req/s and CPU µs per request of a baseline's reference, as measured beside one row. */
interface BaselineFigures {
  requestsPerSecond: number;
  cpuMicrosPerRequest: number | null;
}

/**
 * Each scenario between two measurements of its baseline's reference, one right before it and one right after it
 * (consecutive rows with the same baseline share the one between them), and its ratios against the mean of the two:
 * on a machine whose speed drifts during a run, a ratio against one measurement taken minutes earlier moved by more
 * than most changes do (bench/README.md, *Baselines beside each row*). A scenario's run on Citus sits between the
 * same two. Each baseline's own row, at the top, is its median measurement of the run, with the count in a note.
 */
async function measureRows(servers: Servers, selection: Selection, settings: Settings, signal: AbortSignal): Promise<ResultRow[]> {
  // One after another, never two at once: the machine may have as few as two cores.
  const measureRow = async (
    request: MeasuredRequest,
    target: Target,
    baseline: BaselineName,
    goalRatio?: number,
    context: Omit<ScenarioContext, 'url'> = servers.context,
  ): Promise<ResultRow> => {
    log(`measuring ${request.name} on ${target.label} (${settings.warmupSeconds}s warm-up, ${settings.durationSeconds}s)`);
    const { prepared, measurement, notes } = await measureRequest(request, target, context, settings, signal);
    return {
      name: request.name,
      target: (request.instances ?? 1) > 1 ? `${target.label} ×${request.instances}` : target.label,
      baseline,
      method: prepared.method,
      path: prepared.path,
      measurement,
      ratio: null,
      cpuRatio: null,
      goalRatio: goalRatio ?? null,
      goalMet: null,
      notes,
    };
  };

  const references = new Map<BaselineName, ResultRow[]>();
  const measureBaseline = async (name: BaselineName): Promise<BaselineFigures> => {
    const row = await measureRow(baselines[name].reference, servers.baselines.get(name)!, name);
    references.set(name, [...(references.get(name) ?? []), row]);
    return { requestsPerSecond: row.measurement.requestsPerSecond, cpuMicrosPerRequest: row.measurement.cpuMicrosPerRequest };
  };

  const scenarioRows: ResultRow[] = [];
  /** The baseline measured last, with nothing measured since. */
  let latest: { name: BaselineName; figures: BaselineFigures } | null = null;
  for (const scenario of selection.scenarios) {
    const before = latest?.name === scenario.baseline ? latest.figures : await measureBaseline(scenario.baseline);
    const measured = [await measureRow(scenario, servers.app, scenario.baseline, scenario.goalRatio)];
    // The same row on Citus right after it, set up anew there, so that both meet the same load on the machine.
    if (servers.citus && scenario.citus) {
      measured.push(await measureRow(scenario, servers.citus.target, scenario.baseline, scenario.goalRatio, servers.citus.context));
    }
    const after = await measureBaseline(scenario.baseline);
    latest = { name: scenario.baseline, figures: after };
    for (const row of measured) {
      setRatios(row, beside(before, after));
      scenarioRows.push(row);
    }
  }

  const baselineRows: ResultRow[] = [];
  for (const measured of references.values()) {
    const median = [...measured].sort((a, b) => a.measurement.requestsPerSecond - b.measurement.requestsPerSecond)[(measured.length - 1) >> 1]!;
    median.ratio = 1;
    median.cpuRatio = median.measurement.cpuMicrosPerRequest === null ? null : 1;
    if (measured.length > 1) {
      const rates = measured.map((row) => Math.round(row.measurement.requestsPerSecond));
      median.notes.push(
        `measured ${measured.length} times, beside each of its rows (${Math.min(...rates)}–${Math.max(...rates)} req/s); this is the median`,
      );
    }
    for (const row of measured) if (row !== median) median.notes.push(...row.notes);
    baselineRows.push(median);
  }
  return [...baselineRows, ...scenarioRows];
}

/** The mean of a baseline's two measurements around a row. */
function beside(before: BaselineFigures, after: BaselineFigures): BaselineFigures {
  return {
    requestsPerSecond: (before.requestsPerSecond + after.requestsPerSecond) / 2,
    cpuMicrosPerRequest:
      before.cpuMicrosPerRequest === null || after.cpuMicrosPerRequest === null
        ? null
        : (before.cpuMicrosPerRequest + after.cpuMicrosPerRequest) / 2,
  };
}

/** A row's req/s and CPU ratios against its baseline's figures, and whether the req/s ratio met its goal. */
function setRatios(row: ResultRow, reference: BaselineFigures): void {
  row.ratio = reference.requestsPerSecond > 0 ? row.measurement.requestsPerSecond / reference.requestsPerSecond : null;
  row.cpuRatio =
    reference.cpuMicrosPerRequest && row.measurement.cpuMicrosPerRequest
      ? Math.round((reference.cpuMicrosPerRequest / row.measurement.cpuMicrosPerRequest) * 1000) / 1000
      : null;
  // Judged on the two decimals the table shows, so that a row never reads "0.60 … ≥ 0.60 missed".
  row.goalMet = row.goalRatio === null || row.ratio === null ? null : Math.round(row.ratio * 100) / 100 >= row.goalRatio;
}

/** The p50 ratios of the comparisons whose two rows both ran. */
function compareRows(rows: ResultRow[]): ComparisonResult[] {
  const results: ComparisonResult[] = [];
  for (const comparison of comparisons) {
    const numerator = rows.find((row) => row.target === 'app' && row.name === comparison.numerator);
    const denominator = rows.find((row) => row.target === 'app' && row.name === comparison.denominator);
    if (!numerator || !denominator) continue;
    const p50Ratio = numerator.measurement.latencyP50Ms / denominator.measurement.latencyP50Ms;
    results.push({
      name: comparison.name,
      numerator: comparison.numerator,
      denominator: comparison.denominator,
      numeratorP50Ms: numerator.measurement.latencyP50Ms,
      denominatorP50Ms: denominator.measurement.latencyP50Ms,
      p50Ratio: Math.round(p50Ratio * 1000) / 1000,
      goalAtMost: comparison.goalAtMost ?? null,
      goalMet: comparison.goalAtMost === undefined ? null : Math.round(p50Ratio * 100) / 100 <= comparison.goalAtMost,
    });
  }
  return results;
}

/**
 * After every row, so that nothing is under load meanwhile: the in-process micro-benchmarks, then the scale runs
 * (last: they add a 100,000-ticket grant and 100,000-ticket locks to the database). A failure is a note, not an end.
 */
async function runInProcess(
  servers: Servers,
  selection: Selection,
  settings: Settings,
  signal: AbortSignal,
): Promise<{ micro: MicroResult[]; scale: ScaleResult[]; failures: string[] }> {
  const micro: MicroResult[] = [];
  const scale: ScaleResult[] = [];
  const failures: string[] = [];
  for (const benchmark of selection.micro) {
    log(`measuring ${benchmark.name} (${settings.microWarmupIterations} warm-up calls, ${settings.microIterations} calls)`);
    try {
      micro.push(
        await runMicro(
          benchmark,
          { databaseUrl: servers.context.databaseUrl },
          { iterations: settings.microIterations, warmupIterations: settings.microWarmupIterations },
          signal,
        ),
      );
    } catch (error) {
      signal.throwIfAborted();
      failures.push(`note: ${benchmark.name}: failed: ${messageOf(error)}`);
    }
  }
  // Where a scale run failed, what the services logged meanwhile (LOG_LEVEL=warn) goes with it: a 500 names its cause
  // only there.
  const logged = [servers.app, ...(servers.citus ? [servers.citus.target] : [])].map((target) => ({ target, before: target.server.printed().lines }));
  if (selection.scale.length > 0) {
    log(`scale runs (${settings.scaleRuns} each): ${selection.scale.map((run) => run.name).join('; ')}`);
    try {
      const outcome = await runScaleBenchmarks(
        { ...servers.context, appPid: servers.app.server.pid, runs: settings.scaleRuns },
        selection.scale,
        signal,
      );
      scale.push(...outcome.results);
      failures.push(...outcome.failures);
    } catch (error) {
      signal.throwIfAborted();
      failures.push(`note: scale runs failed: ${messageOf(error)}`);
    }
  }
  const onCitus = selection.scale.filter((run) => run.citus);
  if (servers.citus && onCitus.length > 0) {
    log(`scale runs on Citus (${settings.scaleRuns} each): ${onCitus.map((run) => run.name).join('; ')}`);
    try {
      const outcome = await runScaleBenchmarks(
        { ...servers.citus.context, appPid: servers.citus.target.server.pid, runs: settings.scaleRuns },
        onCitus,
        signal,
      );
      scale.push(...outcome.results.map((result) => ({ ...result, name: `${result.name}${CITUS_SUFFIX}` })));
      failures.push(...outcome.failures.map((failure) => `${failure} (on Citus)`));
    } catch (error) {
      signal.throwIfAborted();
      failures.push(`note: scale runs on Citus failed: ${messageOf(error)}`);
    }
  }
  for (const { target, before } of failures.length > 0 ? logged : []) {
    const printed = target.server.printed();
    if (printed.lines === before) continue;
    const errors = printed.tail.split('\n').filter((line) => /"level":(50|60)/.test(line));
    const last = (errors.at(-1) ?? printed.tail.split('\n').at(-1) ?? '').slice(0, 600);
    failures.push(`note: ${target.label} printed ${printed.lines - before} log line(s) during the scale runs; the last${errors.length > 0 ? ' error' : ''}: ${last}`);
  }
  return { micro, scale, failures };
}

/** The printed summary: settings, the table, comparisons, micro and scale results, notes, where the JSON is. */
function summary(report: BenchReport, failures: string[]): string {
  const { settings, environment, rows } = report;
  const lines = [
    '',
    `${settings.connections} connections, ${settings.warmupSeconds}s warm-up + ${settings.durationSeconds}s per row, ` +
      `node ${environment.node}, ${environment.cpus} CPUs (load average ${environment.loadAverageBefore.toFixed(2)} before), ` +
      `commit ${report.commit?.slice(0, 12) ?? 'unknown'}${report.dirty ? ' (dirty)' : ''}`,
    '',
    ...(rows.length > 0 ? [formatTable(rows), ''] : []),
  ];
  const extra = [
    ...formatComparisons(report.comparisons),
    ...formatMicro(report.micro),
    ...(report.scale.length > 0 ? [formatScale(report.scale)] : []),
    ...formatCitus(report.citus),
  ];
  if (extra.length > 0) lines.push(...extra, '');
  for (const row of rows) for (const note of row.notes) lines.push(`note: ${row.name}: ${note}`);
  lines.push(...failures, `results: ${resultsPath}`, '');
  return lines.join('\n');
}

async function main(): Promise<number> {
  let settings: Settings;
  try {
    settings = readSettings(process.env);
  } catch (error) {
    log(messageOf(error));
    return 2;
  }
  const selection = select(settings);
  if (typeof selection === 'string') {
    log(selection);
    return 2;
  }

  const controller = new AbortController();
  const { signal } = controller;
  abortOnSignals(controller);

  const cleanups: Cleanups = [];
  const startedAt = new Date();
  try {
    log('building (npm run build)');
    await runCommand('npm', ['run', '--silent', 'build'], { cwd: repoRoot });
    signal.throwIfAborted();
    const servers = await startServers(settings, selection, signal, cleanups);

    // Other work on the machine (tests, a compiler) skews the rows it overlaps: the load is reported with them.
    const loadBefore = loadavg()[0] ?? 0;
    const rows = await measureRows(servers, selection, settings, signal);
    const inProcess = await runInProcess(servers, selection, settings, signal);

    const { commit, dirty } = gitCommit();
    const report: BenchReport = {
      startedAt: startedAt.toISOString(),
      finishedAt: new Date().toISOString(),
      commit,
      dirty,
      environment: {
        node: process.version,
        platform: `${process.platform}-${process.arch}`,
        cpus: cpus().length,
        cpuModel: cpus()[0]?.model ?? 'unknown',
        loadAverageBefore: Number(loadBefore.toFixed(2)),
      },
      settings: {
        connections: settings.connections,
        durationSeconds: settings.durationSeconds,
        warmupSeconds: settings.warmupSeconds,
        microIterations: settings.microIterations,
        microWarmupIterations: settings.microWarmupIterations,
      },
      rows,
      comparisons: compareRows(rows),
      micro: inProcess.micro,
      scale: inProcess.scale,
      citus: compareCitus(selection.scenarios, rows, inProcess.scale),
    };
    await writeReport(resultsPath, report);
    process.stdout.write(summary(report, inProcess.failures));

    return rows.some((row) => row.measurement.status2xx === 0) || inProcess.failures.length > 0 ? 1 : 0;
  } catch (error) {
    if (signal.aborted) {
      log(messageOf(signal.reason));
      return 130;
    }
    log(`failed: ${messageOf(error)}`);
    return 1;
  } finally {
    for (const cleanup of cleanups.reverse()) {
      await cleanup.run().catch((error: unknown) => log(`cleanup (${cleanup.label}) failed: ${messageOf(error)}`));
    }
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    log(`unexpected: ${messageOf(error)}`);
    process.exit(1);
  },
);
