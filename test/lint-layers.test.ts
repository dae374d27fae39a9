// The layers' import rules in eslint.config.js (docs/house-style.md, "The shape"): each refuses a deliberate violation, so a
// rule cannot silently stop working, and a file that keeps to the layers lints clean.
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const eslint = new ESLint({ cwd: root });

/** Every message ESLint reports for `code` as if it were the file at `path` (relative to the repository). */
async function lint(path: string, code: string) {
  const [result] = await eslint.lintText(code, { filePath: join(root, path) });
  return result!.messages.map(({ ruleId, message }) => ({ ruleId, message }));
}

/** A module that imports `source` and uses what it imported, so only the import itself can be at fault. */
const importing = (source: string) => `import * as imported from '${source}';\nexport const used = imported;\n`;

const VIOLATIONS: { rule: string; path: string; code: string; message: RegExp }[] = [
  {
    rule: 'src/db must not import services',
    path: 'src/db/repositories/example.repo.ts',
    code: "import type { Page } from '../../services/pagination.js';\nexport type Rows = Page<string>;\n",
    message: /src\/db/,
  },
  {
    rule: 'src/db must not re-export from services',
    path: 'src/db/repositories/example.repo.ts',
    code: "export { pageOf } from '../../services/pagination.js';\n",
    message: /src\/db/,
  },
  {
    rule: 'src/db must not import plugins',
    path: 'src/db/example.ts',
    code: importing('../plugins/metrics.js'),
    message: /src\/db/,
  },
  {
    rule: 'src/db must not import routes',
    path: 'src/db/repositories/example.repo.ts',
    code: importing('../../routes/shared/pages.js'),
    message: /src\/routes/,
  },
  {
    rule: 'src/services must not import fastify (types included)',
    path: 'src/services/example.service.ts',
    code: "import type { FastifyInstance } from 'fastify';\nexport type App = FastifyInstance;\n",
    message: /framework-free/,
  },
  {
    rule: 'src/services must not import fastify-plugin',
    path: 'src/services/example.service.ts',
    code: importing('fastify-plugin'),
    message: /framework-free/,
  },
  {
    rule: 'src/services must not import @fastify/*',
    path: 'src/services/example.service.ts',
    code: importing('@fastify/rate-limit'),
    message: /framework-free/,
  },
  {
    rule: 'src/services must not import plugins',
    path: 'src/services/example.service.ts',
    code: importing('../plugins/bearer-auth.js'),
    message: /src\/plugins/,
  },
  {
    rule: 'src/services must not import routes',
    path: 'src/services/example.service.ts',
    code: importing('../routes/shared/pages.js'),
    message: /src\/routes/,
  },
  {
    rule: 'src/schemas must not import services',
    path: 'src/schemas/example.ts',
    code: importing('../services/ticket.service.js'),
    message: /src\/schemas/,
  },
  {
    rule: 'src/shared must not import services',
    path: 'src/shared/example.ts',
    code: importing('../services/ticket.service.js'),
    message: /src\/shared/,
  },
  {
    rule: 'plugins must not import routes',
    path: 'src/plugins/example.ts',
    code: importing('../routes/operator/index.js'),
    message: /src\/routes/,
  },
  {
    rule: 'the command line must not import routes',
    path: 'src/cli.ts',
    code: importing('./routes/oauth/index.js'),
    message: /src\/routes/,
  },
  {
    rule: 'routes must not import the database',
    path: 'src/routes/operator/example.ts',
    code: importing('../../db/repositories/ticket.repo.js'),
    message: /never the database/,
  },
  {
    rule: 'routes must not import the database types either',
    path: 'src/routes/access/example.ts',
    code: "import type { GroupRecord } from '../../db/repositories/group.repo.js';\nexport type Group = GroupRecord;\n",
    message: /never the database/,
  },
  {
    rule: 'the configuration must not import services',
    path: 'src/config.ts',
    code: importing('./services/index.js'),
    message: /src\/config\.ts/,
  },
  {
    rule: 'the configuration must not import the database',
    path: 'src/config.ts',
    code: importing('./db/open.js'),
    message: /src\/config\.ts/,
  },
  {
    rule: 'the configuration must not import the app',
    path: 'src/config.ts',
    code: importing('./app.js'),
    message: /src\/config\.ts/,
  },
];

/** Code that reads the environment, which only the entry points may. */
const READS_ENVIRONMENT = 'export const port = process.env.PORT;\n';

const CLEAN: { path: string; sources: string[] }[] = [
  {
    path: 'src/app.ts',
    sources: [
      'fastify',
      './plugins/problem-details.js',
      './routes/operator/index.js',
      './services/index.js',
    ],
  },
  {
    path: 'src/routes/operator/example.ts',
    sources: [
      'fastify',
      '../shared/pages.js',
      '../../services/ticket.service.js',
      '../../schemas/ticket.js',
      '../../plugins/oauth-errors.js',
    ],
  },
  { path: 'src/config.ts', sources: ['@sinclair/typebox', './shared/deprecations.js'] },
  { path: 'src/plugins/example.ts', sources: ['fastify-plugin', '../services/index.js', '../errors.js'] },
  {
    path: 'src/services/example.service.ts',
    sources: [
      '../db/repositories/ticket.repo.js',
      '../errors.js',
      '../shared/pagination.js',
      '../shared/scopes.js',
    ],
  },
  {
    path: 'src/db/repositories/example.repo.ts',
    sources: [
      '../database.js',
      '../../shared/keyset.js',
      './ticket.repo.js',
      '../../errors.js',
    ],
  },
  { path: 'src/schemas/example.ts', sources: ['@sinclair/typebox', '../shared/scopes.js', './problem.js'] },
];

describe('the layers’ import rules', () => {
  it.each(VIOLATIONS)('$rule', async ({ path, code, message }) => {
    const messages = await lint(path, code);
    expect(messages).toHaveLength(1);
    expect(messages[0]!.ruleId).toBe('no-restricted-imports');
    expect(messages[0]!.message).toMatch(message);
  });

  it.each(['src/services/example.service.ts', 'src/db/open.ts', 'src/routes/ops/example.ts', 'src/config.ts'])(
    '%s must not read process.env',
    async (path) => {
      const messages = await lint(path, READS_ENVIRONMENT);
      expect(messages.map(({ ruleId }) => ruleId)).toEqual(['no-restricted-properties']);
    },
  );

  it.each(['src/server.ts', 'src/cli.ts'])('%s may read process.env', async (path) => {
    expect(await lint(path, READS_ENVIRONMENT)).toEqual([]);
  });

  it.each(CLEAN)('$path may import what lies below it', async ({ path, sources }) => {
    const imports = sources.map((source, index) => `import * as m${index} from '${source}';\n`).join('');
    const uses = `export const used = [${sources.map((_, index) => `m${index}`).join(', ')}];\n`;
    expect(await lint(path, imports + uses)).toEqual([]);
  });
});
