// Removed interfaces stand apart in the OpenAPI documents (docs/api-reference.md 4.4): marked deprecated, with the date of removal.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DEPRECATIONS, overviewDate } from '../../src/shared/deprecations.js';

const DOCUMENTS = ['operatorapi', 'accessapi', 'deviceapi', 'oauth'];

interface Operation {
  summary?: string;
  description?: string;
  deprecated?: boolean;
}

const operations = DOCUMENTS.flatMap((name) => {
  const document = JSON.parse(readFileSync(new URL(`../../openapi/${name}.json`, import.meta.url), 'utf8')) as {
    paths: Record<string, Record<string, Operation>>;
  };
  return Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({ id: `${method.toUpperCase()} ${path}`, operation })),
  );
});

describe('removed operations in the OpenAPI documents', () => {
  const removed = operations.filter(({ operation }) => /\(removed /.test(operation.summary ?? ''));

  it('finds the removed token retrieval by device and by lock', () => {
    expect(removed.map(({ id }) => id).sort()).toEqual([
      'GET /operatorapi/mobiledevices/{id}/tickets',
      'GET /operatorapi/securedobjects/{id}/tickets',
    ]);
  });

  it('marks each deprecated and says since when it is removed', () => {
    const since = overviewDate(DEPRECATIONS.ticketsByObject.removedOn);
    for (const { id, operation } of removed) {
      expect(operation.deprecated, id).toBe(true);
      expect(operation.summary, id).toContain(`(removed ${since})`);
      expect(operation.description, id).toMatch(new RegExp(`^Removed on ${since.replace(/\./g, '\\.')}: answers \`410 Gone\``));
    }
  });

  it('marks no live operation deprecated', () => {
    const marked = operations.filter(({ operation }) => operation.deprecated === true).map(({ id }) => id);
    expect(marked.sort()).toEqual(removed.map(({ id }) => id).sort());
  });
});
