// The README's configuration table is generated from the config schema: a new variable cannot go undocumented.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configTable } from '../scripts/config-table.js';

describe('README', () => {
  it('holds the configuration table generated from the schema (npx tsx scripts/config-table.ts)', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    expect(readme).toContain(configTable());
  });
});
