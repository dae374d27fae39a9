// The one path to a removed interface's 410 (docs/api-reference.md 4.4): every answer is built by removalError from the registry.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { GoneError } from '../../src/errors.js';
import { removalError } from '../../src/routes/shared/removed.js';
import { DEPRECATIONS } from '../../src/shared/deprecations.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

function sourceFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    return entry.isDirectory() ? sourceFiles(path) : entry.name.endsWith('.ts') ? [path] : [];
  });
}

describe('removalError', () => {
  it('answers 410 with the registry entry’s notice, Sunset, successor link and successor', () => {
    const error = removalError(DEPRECATIONS.lockSync);
    expect(error).toBeInstanceOf(GoneError);
    expect(error.status).toBe(410);
    expect(error.detail).toBe(
      'Online secured object synchronisation (GET /tickets/lockserver/binary) was removed on 01.01.2018. ' +
        'Use GET /deviceapi/securedobjects/{id}/sync instead.',
    );
    expect(error.headers).toEqual({ sunset: 'Mon, 01 Jan 2018 00:00:00 GMT', link: '</deviceapi/apidocs/index.html>; rel="successor-version"' });
    expect(error.extensions).toEqual({ successor: 'GET /deviceapi/securedobjects/{id}/sync' });
  });

  it('links the given successor instead of the registry’s, and never says Deprecation (the interface is gone)', () => {
    const error = removalError(DEPRECATIONS.tokenCardV1, '/v1/residents/r%201/token-card?version=2');
    expect(error.headers).toEqual({ sunset: 'Fri, 01 Mar 2019 00:00:00 GMT', link: '</v1/residents/r%201/token-card?version=2>; rel="successor-version"' });
    expect(error.extensions).toEqual({ successor: DEPRECATIONS.tokenCardV1.successor });
  });

  it('is the only place in src that builds a GoneError', () => {
    const builders = sourceFiles(join(root, 'src'))
      .filter((path) => readFileSync(path, 'utf8').includes('new GoneError('))
      .map((path) => relative(root, path).replaceAll('\\', '/'));
    expect(builders).toEqual(['src/routes/shared/removed.ts']);
  });
});
