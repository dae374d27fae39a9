// The compose stack gives the server longer to stop than the server gives its in-flight requests, so docker never kills it mid-shutdown.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../src/config.js';

const compose = readFileSync(new URL('../../docker-compose.yml', import.meta.url), 'utf8');

/** The lines of one service of the compose file (`  name:` up to the next line indented as little). */
function serviceBlock(name: string): string[] {
  const lines = compose.split('\n');
  const start = lines.findIndex((line) => line === `  ${name}:`);
  expect(start, `docker-compose.yml has a service "${name}"`).toBeGreaterThanOrEqual(0);
  const block: string[] = [];
  for (const line of lines.slice(start + 1)) {
    if (line.trim() !== '' && !line.startsWith('   ')) break;
    block.push(line);
  }
  return block;
}

/** A compose duration (`20s`, `1m30s`, `500ms`) in milliseconds. */
function durationMs(text: string): number {
  const units: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 0.001 };
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(h|ms|m|s|us)/g)];
  expect(parts.map((part) => part[0]).join(''), `"${text}" is a compose duration`).toBe(text);
  return parts.reduce((sum, [, amount, unit]) => sum + Number(amount) * units[unit!]!, 0);
}

describe('shutdown grace in docker-compose.yml', () => {
  it('lets the app stop for longer than the server waits for in-flight requests (SHUTDOWN_TIMEOUT_MS)', () => {
    const line = serviceBlock('app').find((text) => /^\s+stop_grace_period:/.test(text));
    // Without it docker stop sends SIGKILL after 10 s, the server's own default grace: a shutdown at the limit is cut off.
    expect(line, 'the app service sets stop_grace_period').toBeDefined();
    const grace = durationMs(line!.replace(/^\s+stop_grace_period:\s*/, '').replace(/^["']|["']$/g, '').trim());
    const serverGrace = ConfigSchema.properties.SHUTDOWN_TIMEOUT_MS.default as number;
    expect(serverGrace).toBe(10_000);
    // Room after the server's grace for closing the database and the process exiting.
    expect(grace).toBeGreaterThanOrEqual(serverGrace + 5000);
  });
});
