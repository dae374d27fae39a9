// Routes read their input as TypeBox infers it from the schema that validated it (docs/house-style.md convention 2): no casts of it.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

function sourceFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    return entry.isDirectory() ? sourceFiles(path) : entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** `request.body as …`, `request.params.id as string`, `(request.query ?? {}) as …`: a cast of the request's input. */
const CAST_OF_INPUT = /request\.(body|params|query)\b[^;\n]*?\)?\s+as\s+[A-Za-z{(]/;

describe('route input', () => {
  it('is never cast in src/routes: the validating schema types it', () => {
    const casts = sourceFiles(join(root, 'src/routes')).flatMap((path) =>
      readFileSync(path, 'utf8')
        .split('\n')
        .filter((line) => CAST_OF_INPUT.test(line))
        .map((line) => `${relative(root, path).replaceAll('\\', '/')}: ${line.trim()}`),
    );
    expect(casts).toEqual([]);
  });

  it('recognises the casts it refuses', () => {
    for (const line of [
      'const body = request.body as { name: string };',
      'service.addMember(context, request.params.id as string, member)',
      'const params = (request.params ?? {}) as Record<string, string>;',
      'const query = request.query as Record<string, unknown> | undefined;',
    ]) {
      expect(CAST_OF_INPUT.test(line), line).toBe(true);
    }
    expect(CAST_OF_INPUT.test('const { limit, cursor } = request.query;')).toBe(false);
  });
});
