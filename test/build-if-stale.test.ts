// scripts/build-if-stale.mjs (what `npm start`, `npm run cli` and the test setup run first) compiles when an input is
// newer than the last successful build, and only then: run on a small project in a temporary directory whose
// `typescript/bin/tsc` records each run and copies src/ to dist/ (the real compiler would take seconds a run).
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
