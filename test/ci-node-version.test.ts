// CI says which Node.js runs it: the recommended LTS (22), the older supported one (20), or a warning for anything
// else or anything below package.json's engines, which stays at >=20.12 (node:crypto's one-shot `hash`) so Node.js 20 installations keep working.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const script = new URL('../.ci/node-version.mjs', import.meta.url).pathname;
const notice = (version: string) => execFileSync(process.execPath, [script, version], { encoding: 'utf8' });

describe('.ci/node-version.mjs', () => {
  it('runs first in .ci/run, before anything is installed', () => {
    const run = readFileSync(new URL('../.ci/run', import.meta.url), 'utf8');
    expect(run).toContain('node .ci/node-version.mjs');
    expect(run.indexOf('node .ci/node-version.mjs')).toBeLessThan(run.indexOf('npm ci'));
  });

  it('keeps engines at >=20.12', () => {
    const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { engines: { node: string } };
    expect(manifest.engines.node).toBe('>=20.12');
  });

  it('says the recommended LTS is in use on Node.js 22', () => {
    const text = notice('22.11.0');
    expect(text).toContain('Node.js 22.11.0 (major 22)');
    expect(text).toContain('the recommended LTS is in use');
    expect(text).not.toContain('WARNING');
  });

  it('accepts Node.js 20 from 20.12 and recommends 22', () => {
    const text = notice('v20.12.0');
    expect(text).toContain('major 20');
    expect(text).toContain('Node.js 22 LTS is recommended');
    expect(text).not.toContain('WARNING');
  });

  it('warns on any other major, and below the engines floor', () => {
    expect(notice('24.1.0')).toContain('WARNING: Node.js 24 is neither 20 nor 22');
    expect(notice('20.11.1')).toContain("WARNING: Node.js 20.11.1 is below what package.json's engines asks (>=20.12)");
    expect(notice('18.20.4')).toContain('WARNING');
  });

  it('reports the running Node.js without an argument', () => {
    expect(execFileSync(process.execPath, [script], { encoding: 'utf8' })).toContain(`Node.js ${process.versions.node} `);
  });
});
