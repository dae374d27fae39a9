// Lint configuration: typescript-eslint's recommended rules on every TypeScript file, and the layers' import rules.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// Dependencies point one way (docs/house-style.md, "The shape"): server → app → plugins, routes → services → repositories →
// db. Each pattern below names a layer a folder must not reach; test/lint-layers.test.ts proves each one bites.
const ROUTES = {
  regex: '(^|/)routes(/|$)',
  message: 'Only src/app.ts and the route files themselves import from src/routes.',
};
const SERVICES_FROM_DB = {
  regex: '(^|/)services(/|$)',
  message: 'src/db lies below the services: move what both need into src/db (as KeysetPosition in shared/keyset.ts).',
};
const PLUGINS_FROM_DB = {
  regex: '(^|/)plugins(/|$)',
  message: 'src/db lies below the plugins: the plugins wire the database, never the other way round.',
};
const PLUGINS_FROM_SERVICES = {
  regex: '(^|/)plugins(/|$)',
  message: 'Services lie below src/plugins: the plugins decorate the app with services, never the other way round.',
};
const FASTIFY = {
  regex: '^(fastify|fastify-plugin|@fastify/.*)$',
  message: 'Services are framework-free (docs/house-style.md convention 4): take plain values and throw errors from src/errors.ts.',
};
const SERVICES_FROM_SCHEMAS = {
  regex: '(^|/)services(/|$)',
  message: 'src/schemas must not import services: put a definition both need in src/shared.',
};
const LAYERS_FROM_SHARED = {
  regex: '(^|/)(services|plugins|schemas|db)(/|$)',
  message: 'src/shared holds definitions every layer may use, so it imports none of the layers.',
};

const DB_FROM_ROUTES = {
  regex: '(^|/)db(/|$)',
  message: 'Routes call services, never the database: take what a route needs from a service (convention 1, no SQL in handlers).',
};
const LAYERS_FROM_CONFIG = {
  regex: '(^|/)(services|plugins|schemas|db|routes|simulator)(/|$)|^\\.\\/(app|server|cli|logger)\\.js$',
  message: 'src/config.ts imports nothing above src/shared: every layer reads the configuration, so it depends on none of them.',
};

/** The import rule with these patterns. One rule per file: a later block replaces an earlier one, so each repeats ROUTES. */
const restrictImports = (...patterns) => ({ 'no-restricted-imports': ['error', { patterns }] });

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', 'data/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'error',
    },
  },
  { files: ['src/**/*.ts'], ignores: ['src/app.ts', 'src/routes/**'], rules: restrictImports(ROUTES) },
  { files: ['src/db/**/*.ts'], rules: restrictImports(ROUTES, SERVICES_FROM_DB, PLUGINS_FROM_DB) },
  { files: ['src/services/**/*.ts'], rules: restrictImports(ROUTES, PLUGINS_FROM_SERVICES, FASTIFY) },
  { files: ['src/schemas/**/*.ts'], rules: restrictImports(ROUTES, SERVICES_FROM_SCHEMAS) },
  { files: ['src/shared/**/*.ts'], rules: restrictImports(ROUTES, LAYERS_FROM_SHARED) },
  { files: ['src/routes/**/*.ts'], rules: restrictImports(DB_FROM_ROUTES) },
  // Configuration comes from the environment once, validated at start (convention 7): only the entry points read it.
  {
    files: ['src/**/*.ts'],
    ignores: ['src/server.ts', 'src/cli.ts', 'src/simulator/cli.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'env', message: 'Only src/server.ts and src/cli.ts read process.env: take the value from the validated Config.' },
      ],
    },
  },
  { files: ['src/config.ts'], rules: restrictImports(ROUTES, LAYERS_FROM_CONFIG) },
);
