// scripts/build-if-stale.mjs (what `npm start`, `npm run cli` and the test setup run first) compiles when an input is
// newer than the last successful build, and only then, and builds the operator console (docs/console.md) when its
// sources are newer than dist/console/: run on small projects in temporary directories whose `typescript/bin/tsc` and
// `vite/bin/vite.js` record each run and copy the sources (the real ones would take seconds a run).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, temporaryDirectory } from './helpers/process.js';

const SCRIPT = join(ROOT, 'scripts', 'build-if-stale.mjs');

/** A stand-in for tsc: logs its arguments, fails on a source holding `broken`, else copies src/*.ts to dist/*.js. */
const FAKE_TSC = `const fs = require('node:fs');
fs.appendFileSync('tsc-runs.log', process.argv.slice(2).join(' ') + '\\n');
fs.mkdirSync('dist', { recursive: true });
for (const name of fs.readdirSync('src')) {
  const source = fs.readFileSync('src/' + name, 'utf8');
  if (source.includes('broken')) { process.stdout.write('src/' + name + ': error TS1005\\n'); process.exit(2); }
  fs.writeFileSync('dist/' + name.replace(/\\.ts$/, '.js'), source);
}
`;

describe('scripts/build-if-stale.mjs', () => {
  let directory: { path: string; remove(): void };
  const file = (path: string) => join(directory.path, path);
  const read = (path: string) => (existsSync(file(path)) ? readFileSync(file(path), 'utf8') : undefined);
  /** How many times the compiler has run so far. */
  const compiles = () => (read('tsc-runs.log') ?? '').split('\n').filter(Boolean).length;
  /** Runs the script as npm runs a pre-script, from the project's root: its exit code and what the compiler printed. */
  const run = () => {
    const result = spawnSync(process.execPath, [SCRIPT], { cwd: directory.path, encoding: 'utf8' });
    return { code: result.status, output: `${result.stdout}${result.stderr}` };
  };

  beforeAll(() => {
    directory = temporaryDirectory('acs-build-if-stale-');
    mkdirSync(file('src'));
    mkdirSync(file('node_modules/typescript/bin'), { recursive: true });
    writeFileSync(file('node_modules/typescript/package.json'), '{ "name": "typescript", "version": "0.0.0" }\n');
    writeFileSync(file('node_modules/typescript/bin/tsc'), FAKE_TSC);
    writeFileSync(file('package.json'), '{ "type": "module" }\n');
    writeFileSync(file('tsconfig.json'), '{ "compilerOptions": { "strict": true } }\n');
    writeFileSync(file('tsconfig.build.json'), '{ "extends": "./tsconfig.json", "include": ["src"] }\n');
    writeFileSync(file('src/index.ts'), 'export const answer = 1;\n');
    writeFileSync(file('src/extra.ts'), 'export const extra = 1;\n');
  });
  afterAll(() => directory?.remove());

  it('compiles a tree never built, with the build configuration, and stamps dist/', () => {
    expect(run()).toEqual({ code: 0, output: '' });
    expect(read('tsc-runs.log')).toBe('-p tsconfig.build.json\n');
    expect(read('dist/index.js')).toBe('export const answer = 1;\n');
    expect(read('dist/.build-stamp')).toMatch(/^built from the sources as they were at \d{4}-\d\d-\d\dT/);
  });

  it('does not compile when nothing changed since', () => {
    const before = compiles();
    expect(run()).toEqual({ code: 0, output: '' });
    expect(run()).toEqual({ code: 0, output: '' });
    expect(compiles()).toBe(before);
  });

  it('compiles after a source is edited, then not again', () => {
    const before = compiles();
    writeFileSync(file('src/index.ts'), 'export const answer = 2;\n');
    expect(run()).toEqual({ code: 0, output: '' });
    expect(compiles()).toBe(before + 1);
    expect(read('dist/index.js')).toBe('export const answer = 2;\n');
    run();
    expect(compiles()).toBe(before + 1);
  });

  it('compiles after a source is removed (its directory is newer) and after a configuration file changes', () => {
    const before = compiles();
    rmSync(file('src/extra.ts'));
    run();
    expect(compiles()).toBe(before + 1);
    writeFileSync(file('tsconfig.json'), '{ "compilerOptions": { "strict": true, "noUncheckedIndexedAccess": true } }\n');
    run();
    expect(compiles()).toBe(before + 2);
    writeFileSync(file('package.json'), '{ "type": "module", "private": true }\n');
    run();
    expect(compiles()).toBe(before + 3);
  });

  it('fails with the compiler and leaves no stamp, so the next run compiles again and fails again', () => {
    const before = compiles();
    writeFileSync(file('src/index.ts'), 'export const answer = broken;\n');
    expect(run()).toEqual({ code: 2, output: 'src/index.ts: error TS1005\n' });
    expect(read('dist/.build-stamp')).toBeUndefined();
    expect(run()).toEqual({ code: 2, output: 'src/index.ts: error TS1005\n' });
    expect(compiles()).toBe(before + 2);
    writeFileSync(file('src/index.ts'), 'export const answer = 3;\n');
    expect(run()).toEqual({ code: 0, output: '' });
    run();
    expect(compiles()).toBe(before + 3);
  });
});

/**
 * A stand-in for Vite: logs its arguments, fails on a console source holding `broken`, else writes the console's
 * page to dist/console/ from console/index.html and the sources' text (so a test sees which sources it built from).
 */
const FAKE_VITE = `const fs = require('node:fs');
fs.appendFileSync('vite-runs.log', process.argv.slice(2).join(' ') + ' (NODE_ENV=' + process.env.NODE_ENV + ')\\n');
const sources = fs.readdirSync('console/src').sort().map((name) => fs.readFileSync('console/src/' + name, 'utf8')).join('');
if (sources.includes('broken')) { process.stderr.write('console/src: build failed\\n'); process.exit(1); }
fs.mkdirSync('dist/console', { recursive: true });
fs.writeFileSync('dist/console/index.html', fs.readFileSync('console/index.html', 'utf8') + sources);
`;

describe('scripts/build-if-stale.mjs and the console (console/ built to dist/console/ when its sources are newer)', () => {
  let directory: { path: string; remove(): void };
  const file = (path: string) => join(directory.path, path);
  const read = (path: string) => (existsSync(file(path)) ? readFileSync(file(path), 'utf8') : undefined);
  const runsOf = (log: string) => (read(log) ?? '').split('\n').filter(Boolean).length;
  /** How many times the server's compiler and the console's build have run so far. */
  const builds = () => ({ server: runsOf('tsc-runs.log'), console: runsOf('vite-runs.log') });
  /** As the test setup runs it: under vitest, whose NODE_ENV is `test`. */
  const run = () => {
    const result = spawnSync(process.execPath, [SCRIPT], { cwd: directory.path, encoding: 'utf8', env: { ...process.env, NODE_ENV: 'test' } });
    return { code: result.status, output: `${result.stdout}${result.stderr}` };
  };

  beforeAll(() => {
    directory = temporaryDirectory('acs-build-if-stale-console-');
    for (const folder of ['src', 'console/src', 'test/ecosystem/generated', 'node_modules/typescript/bin', 'node_modules/vite/bin']) {
      mkdirSync(file(folder), { recursive: true });
    }
    writeFileSync(file('node_modules/typescript/package.json'), '{ "name": "typescript", "version": "0.0.0" }\n');
    writeFileSync(file('node_modules/typescript/bin/tsc'), FAKE_TSC);
    writeFileSync(file('node_modules/vite/package.json'), '{ "name": "vite", "version": "0.0.0" }\n');
    writeFileSync(file('node_modules/vite/bin/vite.js'), FAKE_VITE);
    writeFileSync(file('package.json'), '{ "type": "commonjs" }\n');
    writeFileSync(file('package-lock.json'), '{ "lockfileVersion": 3 }\n');
    writeFileSync(file('tsconfig.json'), '{ "compilerOptions": { "strict": true } }\n');
    writeFileSync(file('tsconfig.build.json'), '{ "extends": "./tsconfig.json", "include": ["src"] }\n');
    writeFileSync(file('src/index.ts'), 'export const answer = 1;\n');
    writeFileSync(file('console/vite.config.ts'), 'export default {};\n');
    writeFileSync(file('console/index.html'), '<!doctype html>\n');
    writeFileSync(file('console/src/App.tsx'), 'export const screen = "doors";\n');
    writeFileSync(file('test/ecosystem/generated/operatorapi.ts'), 'export interface paths {}\n');
  });
  afterAll(() => directory?.remove());

  it('builds the server, then the console with its configuration for production whatever the caller\'s NODE_ENV, and stamps each', () => {
    expect(run()).toEqual({ code: 0, output: '' });
    expect(builds()).toEqual({ server: 1, console: 1 });
    expect(read('vite-runs.log')).toBe('build --config console/vite.config.ts --logLevel warn (NODE_ENV=production)\n');
    expect(read('dist/console/index.html')).toBe('<!doctype html>\nexport const screen = "doors";\n');
    expect(read('dist/console/.build-stamp')).toMatch(/^built from the sources as they were at \d{4}-\d\d-\d\dT/);
  });

  it('builds neither again while nothing changed', () => {
    expect(run()).toEqual({ code: 0, output: '' });
    expect(run()).toEqual({ code: 0, output: '' });
    expect(builds()).toEqual({ server: 1, console: 1 });
  });

  it('rebuilds the console alone when a console source is newer than its build, then not again', () => {
    writeFileSync(file('console/src/App.tsx'), 'export const screen = "people";\n');
    expect(run()).toEqual({ code: 0, output: '' });
    expect(builds()).toEqual({ server: 1, console: 2 });
    expect(read('dist/console/index.html')).toContain('"people"');
    run();
    expect(builds()).toEqual({ server: 1, console: 2 });
  });

  it('rebuilds the console after a new console source, the generated API types or the lock file change', () => {
    writeFileSync(file('console/src/Doors.tsx'), 'export const doors = 1;\n');
    run();
    expect(builds()).toEqual({ server: 1, console: 3 });
    expect(read('dist/console/index.html')).toContain('export const doors = 1;');
    // The types the console is checked against: an API change rebuilds it (and breaks its build where it no longer fits).
    writeFileSync(file('test/ecosystem/generated/operatorapi.ts'), 'export interface paths { "/doors": object }\n');
    run();
    expect(builds()).toEqual({ server: 1, console: 4 });
    writeFileSync(file('package-lock.json'), '{ "lockfileVersion": 3, "packages": {} }\n');
    run();
    expect(builds()).toEqual({ server: 1, console: 5 });
  });

  it('rebuilds both when package.json changes, the server first', () => {
    writeFileSync(file('package.json'), '{ "type": "commonjs", "private": true }\n');
    run();
    expect(builds()).toEqual({ server: 2, console: 6 });
  });

  it('a failed console build leaves no stamp and exits with its code, so the next run builds it again', () => {
    writeFileSync(file('console/src/App.tsx'), 'export const screen = broken;\n');
    expect(run()).toEqual({ code: 1, output: 'console/src: build failed\n' });
    expect(read('dist/console/.build-stamp')).toBeUndefined();
    expect(run()).toEqual({ code: 1, output: 'console/src: build failed\n' });
    expect(builds()).toEqual({ server: 2, console: 8 });
    writeFileSync(file('console/src/App.tsx'), 'export const screen = "imports";\n');
    expect(run()).toEqual({ code: 0, output: '' });
    expect(read('dist/console/index.html')).toContain('"imports"');
    run();
    expect(builds()).toEqual({ server: 2, console: 9 });
  });

  it('does not build the console when the server fails to compile, and answers the compiler\'s code', () => {
    writeFileSync(file('src/index.ts'), 'export const answer = broken;\n');
    writeFileSync(file('console/src/App.tsx'), 'export const screen = "claims";\n');
    expect(run()).toEqual({ code: 2, output: 'src/index.ts: error TS1005\n' });
    expect(builds()).toEqual({ server: 3, console: 9 });
    writeFileSync(file('src/index.ts'), 'export const answer = 4;\n');
    expect(run()).toEqual({ code: 0, output: '' });
    expect(builds()).toEqual({ server: 4, console: 10 });
    expect(read('dist/console/index.html')).toContain('"claims"');
  });

  it('builds the server alone in a tree without the console\'s sources', () => {
    rmSync(file('console'), { recursive: true });
    writeFileSync(file('src/index.ts'), 'export const answer = 5;\n');
    expect(run()).toEqual({ code: 0, output: '' });
    expect(builds()).toEqual({ server: 5, console: 10 });
  });
});
