// Every citation of the project's own documents resolves: a comment or page naming "docs/FILE" names a file that
// exists, and "docs/FILE 8.1" (or "G48", "section 9", "8.1, 8.2") names a section that file has; every code path the
// documentation names exists; and nothing cites a document outside the repository. A citation that points nowhere
// would send a reader, or a reviewer checking why the code does what it does, to nothing.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
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

/** The documentation: the pages under docs/, the README and the benchmarks' README. */
const DOCUMENTATION = ['README.md', 'bench/README.md', ...filesUnder('docs').filter((path) => path.endsWith('.md'))];
/** Folders a documented path starts from: the repository's own, and src/'s (the pages often leave out `src/`). */
const REPOSITORY_FOLDERS = ['src', 'test', 'test-reliability', 'bench', 'scripts', 'migrations', 'openapi', 'docs', '.ci', 'console'];
const SOURCE_FOLDERS = ['plugins', 'routes', 'schemas', 'shared', 'services', 'db', 'simulator'];
/** A path from one of those folders, as `src/services/batching.ts`, `services/oauth/` or `test/unit/`. */
const CODE_PATH = new RegExp(String.raw`(?<![\w/.@:~-])((?:${[...REPOSITORY_FOLDERS, ...SOURCE_FOLDERS].map((folder) => folder.replace('.', '\\.')).join('|')})/[\w./-]*)`, 'g');
/** A file named alone, as the glossary names `ticket.service.ts` (not `*.test.ts`, which is a pattern). */
const FILE_NAME = /(?<![\w/.*-])([\w-][\w.-]*\.(?:ts|mjs|sql))(?![\w/-])/g;
/** Placeholders the pages write for a name of the reader's choosing: `bench/scenarios/NAME.ts`, `NNN_name.sql`. */
const PLACEHOLDER = /\b(?:NAME|FILE|NNN)(?:\b|_)/;

export interface NamedPath {
  source: string;
  line: number;
  path: string;
}

/** The code paths and file names a page names. */
export function pathsIn(source: string, text: string): { paths: NamedPath[]; fileNames: NamedPath[] } {
  const paths: NamedPath[] = [];
  const fileNames: NamedPath[] = [];
  text.split('\n').forEach((content, index) => {
    for (const match of content.matchAll(CODE_PATH)) {
      const path = match[1]!.replace(/\.+$/, '');
      if (!PLACEHOLDER.test(path)) paths.push({ source, line: index + 1, path });
    }
    for (const match of content.matchAll(FILE_NAME)) {
      const name = match[1]!.replace(/\.+$/, '');
      if (!PLACEHOLDER.test(name)) fileNames.push({ source, line: index + 1, path: name });
    }
  });
  return { paths, fileNames };
}

/** Folders of generated output, which a fresh checkout lacks (the directories .gitignore names). */
const GENERATED = readFileSync(join(ROOT, '.gitignore'), 'utf8')
  .split('\n')
  .filter((line) => line.endsWith('/'));

/** Every file name in the repository's own folders and at its root. */
function fileNamesInRepository(): Set<string> {
  const names = new Set(readdirSync(ROOT));
  const walk = (path: string): void => {
    for (const entry of readdirSync(join(ROOT, path), { withFileTypes: true })) {
      if (entry.name === 'node_modules') continue;
      if (entry.isDirectory()) walk(join(path, entry.name));
      else names.add(entry.name);
    }
  };
  for (const folder of REPOSITORY_FOLDERS) if (statSync(join(ROOT, folder), { throwIfNoEntry: false })) walk(folder);
  return names;
}

/** A Markdown page named by its file name (`api-reference.md`, `NOTES.md`), with or without a folder before it. */
const PAGE_NAME = /(?<![\w.-])((?:[\w.-]+\/)*[\w-][\w.-]*\.md)\b/g;
/** Markdown pages that are not the project's documents but other projects' files (a dependency's README). */
const NOT_OURS = /(?:^|\/)node_modules\//;

/**
 * Citations of a document that lives outside the repository: a page named by a file name that no file of the
 * repository has (the documents the project's own pages grew from are not in it), or a relative path to a page that
 * climbs out of the repository (as `../` from its root). `pages` is every Markdown file name the repository holds.
 */
export function outsideCitationsIn(source: string, text: string, pages: ReadonlySet<string>): string[] {
  const found: string[] = [];
  text.split('\n').forEach((content, index) => {
    for (const match of content.matchAll(PAGE_NAME)) {
      const page = match[1]!;
      if (NOT_OURS.test(page)) continue;
      const outside = page.startsWith('../') && !resolve(ROOT, dirname(source), page).startsWith(`${resolve(ROOT)}${sep}`);
      if (outside || !pages.has(basename(page))) found.push(`${source}:${index + 1} ${page}`);
    }
  });
  return found;
}

describe('code paths in the documentation', () => {
  const named = DOCUMENTATION.map((path) => pathsIn(path, readFileSync(join(ROOT, path), 'utf8')));
  const paths = named.flatMap((page) => page.paths);
  const fileNames = named.flatMap((page) => page.fileNames);

  it('finds the paths it checks', () => {
    expect(paths.length).toBeGreaterThan(100);
    expect(paths.some((path) => path.path === 'src/services/batching.ts')).toBe(true);
    expect(fileNames.some((name) => name.path === 'ticket.service.ts')).toBe(true);
  });

  it('names only paths that exist (from the root, or from src/ for its folders)', () => {
    const missing = paths.filter(
      ({ path }) =>
        !GENERATED.some((folder) => path.startsWith(folder)) &&
        !statSync(join(ROOT, path), { throwIfNoEntry: false }) &&
        !statSync(join(ROOT, 'src', path), { throwIfNoEntry: false }),
    );
    expect(missing.map(({ source, line, path }) => `${source}:${line} ${path}`)).toEqual([]);
  });

  it('names only files that exist somewhere in the repository', () => {
    const existing = fileNamesInRepository();
    const missing = fileNames.filter(({ path }) => !existing.has(basename(path)));
    expect(missing.map(({ source, line, path }) => `${source}:${line} ${path}`)).toEqual([]);
  });
});

describe('citations of documents outside the repository', () => {
  it('appear nowhere in the code, the tests, the benchmarks, the scripts or the documentation', () => {
    const pages = new Set([...fileNamesInRepository()].filter((name) => name.endsWith('.md')));
    // This file's own examples name pages that do not exist, to show the reader finds them.
    const sources = CITING.flatMap(filesUnder).filter((path) => path !== relative(ROOT, new URL(import.meta.url).pathname));
    expect(sources.length).toBeGreaterThan(300);
    expect(sources.flatMap((path) => outsideCitationsIn(path, readFileSync(join(ROOT, path), 'utf8'), pages))).toEqual([]);
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

  it('reads code paths with and without src/, file names alone, and skips placeholders, patterns and URLs', () => {
    const text = [
      'See `src/services/batching.ts`, services/oauth/ and `test/unit/`. Ends a sentence: scripts/build-if-stale.mjs.',
      '`bench/scenarios/NAME.ts`, `NNN_name.sql`, `*.test.ts`, `ticket.service.ts`, https://example.test/src/x.ts, /v1/docs/y',
    ].join('\n');
    const { paths, fileNames } = pathsIn('x', text);
    expect(paths.map(({ path }) => path)).toEqual(['src/services/batching.ts', 'services/oauth/', 'test/unit/', 'scripts/build-if-stale.mjs']);
    expect(fileNames.map(({ path, line }) => `${line} ${path}`)).toEqual(['2 ticket.service.ts']);
  });

  it('knows a citation of an outside document by a page name the repository lacks or a relative path out of it', () => {
    const pages = new Set(['api-reference.md', 'README.md']);
    const text = ['(NOTES.md 4.3)', 'docs/api-reference.md 8.1 and README.md', '[x](../notes/api-reference.md)', '[y](../../outside/README.md)'].join('\n');
    expect(outsideCitationsIn('README.md', text, pages)).toEqual(['README.md:1 NOTES.md', 'README.md:3 ../notes/api-reference.md', 'README.md:4 ../../outside/README.md']);
    // From test/, ../docs/ is the repository's own.
    expect(outsideCitationsIn('test/x.test.ts', '[x](../docs/api-reference.md)', pages)).toEqual([]);
  });
});
