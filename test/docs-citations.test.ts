// Every citation of the project's own documents resolves: a comment or page naming "docs/FILE" names a file that
// exists, and "docs/FILE 8.1" (or "G48", "section 9", "8.1, 8.2") names a section that file has. A citation that
// points nowhere would send a reader, or a reviewer checking why the code does what it does, to nothing.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = new URL('..', import.meta.url).pathname;
/** Where citations are written: the code, the API documents, the benchmarks, the scripts, the tests, CI and the documentation. */
const CITING = ['src', 'openapi', 'bench', 'scripts', 'docs', 'test', 'test-reliability', '.ci', 'README.md', 'CHANGELOG.md'];
const TEXT_FILE = /\.(ts|js|mjs|json|md|sql|ya?ml|html|txt)$/;

function filesUnder(path: string): string[] {
  const absolute = join(ROOT, path);
  if (!statSync(absolute, { throwIfNoEntry: false })) return [];
  if (statSync(absolute).isFile()) return [path];
  return readdirSync(absolute, { withFileTypes: true }).flatMap((entry) =>
    entry.name === 'node_modules' ? [] : entry.isDirectory() ? filesUnder(join(path, entry.name)) : TEXT_FILE.test(entry.name) ? [join(path, entry.name)] : [],
  );
}

/** One section reference: `8.1`, `10`, a checklist group and item `G48`, or a group alone `G`. */
const REFERENCE = String.raw`(?:[A-Z]?\d+(?:\.\d+)*|[A-Z](?![\w-]))`;
/**
 * `docs/FILE` (not part of a longer path such as `/apidocs/json`), then optionally its sections: `8.1`, `section 9`,
 * `8.1, 8.2`, `3.1–3.2`, `4.1 and 4.2`.
 */
const CITATION = new RegExp(
  String.raw`(?<![\w/.-])docs/([\w.-]+\.\w+)(?:\s+(?:section\s+)?(${REFERENCE}(?:(?:,\s*|\s+and\s+|[–-])${REFERENCE})*)(?![\w.]*\w))?`,
  'g',
);

export interface Citation {
  source: string;
  line: number;
  file: string;
  sections: string[];
}

export function citationsIn(source: string, text: string): Citation[] {
  const found: Citation[] = [];
  text.split('\n').forEach((content, index) => {
    for (const match of content.matchAll(CITATION)) {
      const sections = match[2] ? match[2].split(/,\s*|\s+and\s+|[–-]/) : [];
      found.push({ source, line: index + 1, file: match[1]!.replace(/\.$/, ''), sections });
    }
  });
  return found;
}

/**
 * The sections a document defines: numbered headings (`## 8.`, `### 8.1 …`, `## G. …`), numbered items that stand
 * for sections (`- 6.1 …` in the API reference's section 6), and a checklist's items (`48. …`), also under their group
 * as `G48`.
 */
export function sectionsOf(markdown: string): Set<string> {
  const sections = new Set<string>();
  let group: string | null = null;
  for (const line of markdown.split('\n')) {
    const heading = /^#{1,6}\s+([A-Z]|\d+(?:\.\d+)*)[.)]?\s/.exec(line);
    if (heading) {
      sections.add(heading[1]!);
      group = /^[A-Z]$/.test(heading[1]!) ? heading[1]! : null;
      continue;
    }
    const item = /^(?:\s*-\s+(\d+\.\d+)\s|(\d+)\.\s)/.exec(line);
    if (item) {
      const number = (item[1] ?? item[2])!;
      sections.add(number);
      if (group && item[2]) sections.add(`${group}${number}`);
    }
  }
  return sections;
}

describe('docs citations', () => {
  const citations = CITING.flatMap(filesUnder).flatMap((path) => citationsIn(path, readFileSync(join(ROOT, path), 'utf8')));

  it('finds the citations it checks (the pattern still matches how the code cites)', () => {
    expect(citations.length).toBeGreaterThan(500);
    expect(citations.some((citation) => citation.file === 'api-reference.md' && citation.sections.includes('8.1'))).toBe(true);
    expect(citations.some((citation) => citation.file === 'security-cases.md' && citation.sections.includes('G48'))).toBe(true);
  });

  it('names only files that exist in docs/', () => {
    const missing = citations.filter((citation) => !statSync(join(ROOT, 'docs', citation.file), { throwIfNoEntry: false }));
    expect(missing.map((citation) => `${citation.source}:${citation.line} docs/${citation.file}`)).toEqual([]);
  });

  it('names only sections the cited document has', () => {
    const sections = new Map<string, Set<string>>();
    const unresolved: string[] = [];
    for (const citation of citations) {
      if (citation.sections.length === 0 || !citation.file.endsWith('.md')) continue;
      const path = join(ROOT, 'docs', citation.file);
      if (!statSync(path, { throwIfNoEntry: false })) continue;
      if (!sections.has(citation.file)) sections.set(citation.file, sectionsOf(readFileSync(path, 'utf8')));
      for (const section of citation.sections) {
        if (!sections.get(citation.file)!.has(section)) unresolved.push(`${relative('.', citation.source)}:${citation.line} docs/${citation.file} ${section}`);
      }
    }
    expect(unresolved).toEqual([]);
  });
});

describe('the citation reader', () => {
  it('reads a file, its sections and lists of them, and skips paths that only end in docs/', () => {
    const text = [
      '// docs/api-reference.md 8.1, 8.2: keys; docs/api-reference.md 3.1–3.2 and docs/security-cases.md G48.',
      "see docs/service-overview.md section 9 and (docs/glossary.md) and /operatorapi/apidocs/index.html and docs/api-reference.md 4.3's 422",
    ].join('\n');
    expect(citationsIn('x', text).map(({ file, sections }) => `${file} ${sections.join('|')}`)).toEqual([
      'api-reference.md 8.1|8.2',
      'api-reference.md 3.1|3.2',
      'security-cases.md G48',
      'service-overview.md 9',
      'glossary.md ',
      'api-reference.md 4.3',
    ]);
  });

  it('knows headings, section items and checklist items under their group', () => {
    const sections = sectionsOf(['## 6. Device API', '- 6.1 `GET …`', '### 8.1 Keys', '## G. Found', '48. Signed credentials', 'not 7.2 here'].join('\n'));
    expect([...sections].sort()).toEqual(['48', '6', '6.1', '8.1', 'G', 'G48']);
  });
});
