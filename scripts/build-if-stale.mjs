// Compiles src/ to dist/, and builds the operator console (console/) to dist/console/, each only when one of its
// sources changed since its last successful build: what `npm start`, `npm run cli`, `npm run migrate`,
// `npm run simulate` and the test setup run first, so a run on an unchanged tree starts at once.
//
// Plain Node, no dependency: it runs before anything is compiled. Run from the project root (npm runs scripts there):
// `node scripts/build-if-stale.mjs`; its exit code is tsc's (then Vite's), or 0 when nothing needed compiling. `npm run build`
// still compiles unconditionally (CI and the Dockerfile run it); the next run here then compiles once more, finds
// nothing to emit (tsc is incremental) and stamps.
import { spawnSync } from 'node:child_process';
import { readdirSync, rmSync, statSync, writeFileSync, utimesSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import process from 'node:process';

/** What the build reads: the sources and the files that decide how they compile. */
const INPUTS = ['src', 'tsconfig.json', 'tsconfig.build.json', 'package.json'];
/** Written after a successful build, dated when that build began (so an edit made while it ran still counts). */
const STAMP = join('dist', '.build-stamp');
/** The console's sources, the API types it is checked against, and its build configuration (docs/console.md). */
const CONSOLE_INPUTS = ['console', join('test', 'ecosystem', 'generated'), 'package.json', 'package-lock.json'];
const CONSOLE_STAMP = join('dist', 'console', '.build-stamp');

/**
 * The newest modification time under `path`, directories included: removing or renaming a source changes its
 * directory's time, though no remaining file is newer.
 */
function newestTime(path) {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (!stat) return 0;
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestTime(join(path, entry)));
  return newest;
}

/** True when dist/ has no stamp of a successful build, or some input is newer than it. */
function isStale(root, inputs = INPUTS, stampFile = STAMP) {
  const stamp = statSync(join(root, stampFile), { throwIfNoEntry: false });
  if (!stamp) return true;
  return inputs.some((input) => newestTime(join(root, input)) > stamp.mtimeMs);
}

/** Runs the project's tsc on tsconfig.build.json in `root`; stamps dist/ when it succeeds. Returns tsc's exit code. */
function build(root) {
  const startedAt = new Date();
  // A failed build leaves no stamp, so the next run compiles again and shows the errors again.
  rmSync(join(root, STAMP), { force: true });
  // The project's own compiler, as `npm run build` would find it.
  const tsc = createRequire(join(root, 'package.json')).resolve('typescript/bin/tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
  const code = result.status ?? 1;
  if (code === 0) {
    writeFileSync(join(root, STAMP), `built from the sources as they were at ${startedAt.toISOString()}\n`);
    utimesSync(join(root, STAMP), startedAt, startedAt);
  }
  return code;
}

/** Builds the console with the project's Vite into dist/console; stamps it when that succeeds. Returns Vite's exit code. */
function buildConsole(root) {
  const startedAt = new Date();
  rmSync(join(root, CONSOLE_STAMP), { force: true });
  // Vite's package exports no bin path: the command sits beside its package.json.
  const vite = join(dirname(createRequire(join(root, 'package.json')).resolve('vite/package.json')), 'bin', 'vite.js');
  // Always the production build: a caller's NODE_ENV (vitest sets `test` for its global setup) would otherwise make Vite
  // bundle React's development build (twice the size, with its warnings), and the stamp would keep it for `npm start`.
  const result = spawnSync(process.execPath, [vite, 'build', '--config', join('console', 'vite.config.ts'), '--logLevel', 'warn'], {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, NODE_ENV: 'production' },
  });
  const code = result.status ?? 1;
  if (code === 0) {
    writeFileSync(join(root, CONSOLE_STAMP), `built from the sources as they were at ${startedAt.toISOString()}\n`);
    utimesSync(join(root, CONSOLE_STAMP), startedAt, startedAt);
  }
  return code;
}

const root = process.cwd();
const serverCode = isStale(root) ? build(root) : 0;
/** A tree without the console's sources (a server-only copy) builds the server alone. */
const hasConsole = statSync(join(root, 'console', 'vite.config.ts'), { throwIfNoEntry: false }) !== undefined;
process.exitCode =
  serverCode !== 0 ? serverCode : hasConsole && isStale(root, CONSOLE_INPUTS, CONSOLE_STAMP) ? buildConsole(root) : 0;
