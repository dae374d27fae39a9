#!/usr/bin/env node
// The command line (docs/api-reference.md 2): `npm run --silent cli -- COMMAND …`. It calls services, never SQL.
import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { Logger } from 'pino';
import { ConfigError, loadConfig, type Config } from './config.js';
import type { Database } from './db/database.js';
import { DEFAULT_SHARD_COUNT, DistributeError, distribute } from './db/distribute.js';
import { MigrationError, migrate } from './db/migrate.js';
import { openDatabase } from './db/open.js';
import { DataDirInUseError } from './db/pglite.js';
import { ProblemError } from './errors.js';
import { createLogger } from './logger.js';
import { SecretsKeyError, resolveSecretsKey } from './services/keys/secrets-key-source.js';
import { createServices, type Services } from './services/index.js';
import { isUserRole, USER_ROLES } from './shared/scopes.js';
import { splitLogin } from './services/oauth/grants.service.js';

/** A failure the user can fix: printed without a stack, exit code 1 (2 for usage errors). */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export interface CliContext {
  config: Config;
  log: Logger;
  /** Opens (once) and migrates the database; closed when the command ends. */
  database(): Promise<Database>;
  /** The migrations `database()` applied, once it has run. */
  appliedMigrations?: number[];
  /** The services on that database. */
  services(): Promise<Services>;
  readStdin(): Promise<string>;
  out(text: string): void;
}

interface Command {
  path: string[];
  summary: string;
  usage: string;
  options: NonNullable<ParseArgsConfig['options']>;
  run(args: { positionals: string[]; values: Record<string, unknown> }, context: CliContext): Promise<void>;
}

const commands: Command[] = [
  {
    path: ['migrate'],
    summary: 'Apply the pending database migrations and exit.',
    usage: 'migrate [--json]',
    options: { json: { type: 'boolean' } },
    async run({ values }, context) {
      await context.database();
      const applied = context.appliedMigrations ?? [];
      context.out(values.json ? JSON.stringify({ applied }) : applied.length ? `Applied: ${applied.join(', ')}` : 'Up to date.');
    },
  },
  {
    path: ['db', 'distribute'],
    summary:
      'On a Citus coordinator, after the migrations: make the global tables reference tables and every tenant-owned ' +
      'table distributed by tenant_id, co-located (docs/scaling.md). A second run changes nothing.',
    usage: 'db distribute [--shard-count N] [--json]',
    options: { 'shard-count': { type: 'string' }, json: { type: 'boolean' } },
    async run({ positionals, values }, context) {
      const usage = 'Usage: db distribute [--shard-count N] [--json]';
      if (positionals.length > 0) throw new CliError(usage, 2);
      const shardText = values['shard-count'] as string | undefined;
      const shardCount = shardText === undefined ? DEFAULT_SHARD_COUNT : Number(shardText);
      if (!/^\d+$/.test(shardText ?? '1') || !Number.isInteger(shardCount) || shardCount < 1 || shardCount > 64_000) {
        throw new CliError(`--shard-count must be a whole number from 1 to 64000 (got ${shardText}).\n${usage}`, 2);
      }
      const db = await context.database();
      const result = await distribute(db, { shardCount }).catch((error: unknown) => {
        throw error instanceof DistributeError ? new CliError(error.message) : error;
      });
      const changed = result.referenceTables.length + result.distributedTables.length + result.delegatedFunctions.length > 0;
      print(
        context,
        values.json,
        { changed, ...result },
        changed
          ? `Reference tables made: ${result.referenceTables.join(', ') || 'none'}.\n` +
              `Distributed by tenant_id, co-located: ${result.distributedTables.join(', ') || 'none'}.\n` +
              `Foreign keys dropped and added again: ${result.foreignKeys.length}.\n` +
              `Functions run on the tenant's node: ${result.delegatedFunctions.join(', ') || 'none'}.\n` +
              `Now ${result.totalReference} reference tables and ${result.totalDistributed} distributed tables.`
          : `Already distributed: ${result.totalReference} reference tables and ${result.totalDistributed} distributed ` +
              'tables co-located by tenant_id. Nothing changed.',
      );
    },
  },
];

function print(context: CliContext, json: unknown, value: unknown, text: string): void {
  context.out(json ? JSON.stringify(value) : text);
}

const cliAction = (tenantId: string) => ({ tenantId, actor: 'cli', requestId: null });

/** Domain errors (bad names, unknown scopes, conflicts) become CLI errors with the same message. */
async function asCliErrors<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof ProblemError) {
      const fields = error.errors?.map((e) => `  ${e.field}: ${e.message}`).join('\n');
      throw new CliError(fields ? `${error.detail ?? error.title}\n${fields}` : (error.detail ?? error.title));
    }
    throw error;
  }
}

commands.push(
  {
    path: ['tenant', 'create'],
    summary: 'Create a tenant, its management client and its console client; prints the management client secret once.',
    usage: 'tenant create NAME [--json]',
    options: { json: { type: 'boolean' } },
    async run({ positionals, values }, context) {
      const [name, ...rest] = positionals;
      if (!name || rest.length > 0) throw new CliError('Usage: tenant create NAME [--json]', 2);
      const services = await context.services();
      const created = await asCliErrors(() => services.tenants.create(name));
      print(
        context,
        values.json,
        {
          tenant: created.tenant.name,
          clientId: created.clientId,
          clientSecret: created.clientSecret,
          consoleClientId: created.consoleClientId,
        },
        `Tenant ${created.tenant.name} created.\nManagement client id:     ${created.clientId}\n` +
          `Management client secret: ${created.clientSecret}\n(The secret is shown only now.)\n` +
          `Console client id:        ${created.consoleClientId}`,
      );
    },
  },
  {
    path: ['client', 'create'],
    summary: 'Create an OAuth client in a tenant; prints its secret once.',
    usage: 'client create --tenant NAME --scopes "a b" [--name NAME] [--mobile-device ID | --secured-object ID] [--json]',
    options: {
      tenant: { type: 'string' },
      scopes: { type: 'string' },
      name: { type: 'string' },
      'mobile-device': { type: 'string' },
      'secured-object': { type: 'string' },
      json: { type: 'boolean' },
    },
    async run({ positionals, values }, context) {
      const tenantName = values.tenant as string | undefined;
      const scopes = (values.scopes as string | undefined)?.split(/\s+/).filter(Boolean) ?? [];
      if (!tenantName || scopes.length === 0 || positionals.length > 0) {
        throw new CliError('client create needs --tenant NAME and --scopes "a b"', 2);
      }
      const services = await context.services();
      const client = await asCliErrors(async () => {
        const tenant = await services.tenants.byName(tenantName);
        return services.clients.create(cliAction(tenant.id), {
          name: (values.name as string | undefined) ?? 'CLI client',
          scopes,
          mobileDeviceId: values['mobile-device'] as string | undefined,
          securedObjectId: values['secured-object'] as string | undefined,
        });
      });
      print(context, values.json, { tenant: tenantName, ...client }, `Client id:     ${client.clientId}\nClient secret: ${client.clientSecret}\n(The secret is shown only now.)`);
    },
  },
  {
    path: ['user', 'create'],
    summary: 'Create an Access API user; the password is read from standard input.',
    usage: 'user create USER@TENANT --password-stdin [--role admin|operator|viewer] [--json]',
    options: { 'password-stdin': { type: 'boolean' }, role: { type: 'string' }, json: { type: 'boolean' } },
    async run({ positionals, values }, context) {
      const [login, ...rest] = positionals;
      const parts = login ? splitLogin(login) : null;
      if (!parts || rest.length > 0) {
        throw new CliError('Usage: user create USER@TENANT --password-stdin [--role admin|operator|viewer] [--json]', 2);
      }
      // docs/api-reference.md 13: the console role; without one the user cannot sign in to the console.
      const role = values.role as string | undefined;
      if (role !== undefined && !isUserRole(role)) throw new CliError(`--role is one of ${USER_ROLES.join(', ')}.`, 2);
      // A password on the command line would land in the shell history and the process list.
      if (!values['password-stdin']) throw new CliError('Pass the password on standard input with --password-stdin.', 2);
      const password = (await context.readStdin()).replace(/\r?\n$/, '');
      const services = await context.services();
      const user = await asCliErrors(async () => {
        const tenant = await services.tenants.byName(parts.tenantName);
        return services.users.create(cliAction(tenant.id), parts.username, password, role);
      });
      print(context, values.json, { tenant: parts.tenantName, ...user }, `User ${user.username}@${parts.tenantName} created (id ${user.id}).`);
    },
  },
  {
    path: ['keys', 'rotate'],
    summary:
      'Rotate the access-token key, or with --tenant the tenant\'s ticket key: announced one CREDENTIAL_MAX_LIFETIME ' +
      'before it signs; --emergency (a leaked key) signs at once and withdraws the others.',
    usage: 'keys rotate [--tenant NAME [--emergency]] [--json]',
    options: { tenant: { type: 'string' }, emergency: { type: 'boolean' }, json: { type: 'boolean' } },
    async run({ positionals, values }, context) {
      const tenantName = values.tenant as string | undefined;
      if (positionals.length > 0) throw new CliError('Usage: keys rotate [--tenant NAME [--emergency]] [--json]', 2);
      if (tenantName === undefined) {
        if (values.emergency) throw new CliError('--emergency rotates a tenant\'s ticket key: add --tenant NAME.', 2);
        const services = await context.services();
        const { kid, retired } = await services.accessTokenKeys.rotate();
        print(context, values.json, { kid, retired }, `New signing key ${kid}; retired: ${retired.join(', ') || 'none'}.`);
        return;
      }
      const services = await context.services();
      // docs/api-reference.md 8.1: audited in the tenant's trail like a rotation through the Operator API.
      const rotated = await asCliErrors(async () => {
        const tenant = await services.tenants.byName(tenantName);
        return services.ticketKeys.rotate(tenant.id, { emergency: values.emergency === true, context: cliAction(tenant.id) });
      });
      const activates = new Date(rotated.activatesAt).toISOString();
      print(
        context,
        values.json,
        { tenant: tenantName, kid: rotated.kid, activatesTime: rotated.activatesAt, emergency: rotated.emergency, retired: rotated.retired },
        rotated.emergency
          ? `New ticket key ${rotated.kid} of ${tenantName} signs now; withdrawn: ${rotated.retired.join(', ') || 'none'}.\n` +
              'Locks that are never online still hold the withdrawn keys: visit them with the installer\'s tools.'
          : `New ticket key ${rotated.kid} of ${tenantName} is published now and signs from ${activates}; ` +
              `retiring then: ${rotated.retired.join(', ') || 'none'}.`,
      );
    },
  },
  {
    path: ['secrets-key', 'reencrypt'],
    summary:
      'After a change of SECRETS_KEY: seal every value sealed under a key in SECRETS_KEY_PREVIOUS again under ' +
      'SECRETS_KEY (signing keys, stored credentials, webhook secrets). Run it again to check: it then finds them current.',
    usage: 'secrets-key reencrypt [--json]',
    options: { json: { type: 'boolean' } },
    async run({ positionals, values }, context) {
      if (positionals.length > 0) throw new CliError('Usage: secrets-key reencrypt [--json]', 2);
      const services = await context.services();
      const report = await services.secretsKey.reencrypt();
      const resealed = Object.values(report.resealed).reduce((sum, count) => sum + count, 0);
      const lines = [
        `Sealed again under SECRETS_KEY: ${resealed} (signing keys ${report.resealed.signingKey}, credentials ` +
          `${report.resealed.credential}, webhook secrets ${report.resealed.webhookSecret + report.resealed.previousWebhookSecret}); ` +
          `already under it: ${report.alreadyCurrent}.`,
      ];
      if (report.unopenable.length > 0) {
        lines.push(
          `${report.unopenable.length} value(s) open under none of the given keys and were left as they are ` +
            '(add the key that sealed them to SECRETS_KEY_PREVIOUS and run this again):',
          ...report.unopenable.slice(0, 20).map((value) => `  ${value.kind} ${value.key.join('/')}`),
          ...(report.unopenable.length > 20 ? [`  … and ${report.unopenable.length - 20} more (--json lists all)`] : []),
        );
      }
      if (report.stillChanging > 0) {
        lines.push(
          `${report.stillChanging} value(s) kept changing while they were sealed again: a server still seals under a ` +
            'previous key. Restart every server with the new SECRETS_KEY, then run this again.',
        );
      }
      const done = report.unopenable.length === 0 && report.stillChanging === 0;
      if (done && context.config.SECRETS_KEY_PREVIOUS) {
        lines.push('Everything is sealed under SECRETS_KEY: remove SECRETS_KEY_PREVIOUS from every server\'s environment.');
      }
      print(context, values.json, report, lines.join('\n'));
      if (!done) throw new CliError('Not every value is sealed under SECRETS_KEY yet (above); keep SECRETS_KEY_PREVIOUS.', 1);
    },
  },
);

function helpText(prefix: string[]): string {
  const matching = commands.filter((command) => prefix.every((word, index) => command.path[index] === word));
  const lines = [
    `Usage: npm run --silent cli -- ${prefix.length ? `${prefix.join(' ')} ` : ''}COMMAND [OPTIONS]`,
    '',
    'Commands:',
    ...matching.map((command) => `  ${command.usage.padEnd(64)} ${command.summary}`),
    '',
    'Every command reads the same environment as the server (DATABASE_URL, DATA_DIR, SECRETS_KEY, …).',
    'With the embedded database it refuses to run while a server holds DATA_DIR.',
    'Add --help to any command for its usage.',
  ];
  return lines.join('\n');
}

export async function runCli(argv: string[], context: CliContext): Promise<void> {
  const words = argv.filter((arg) => !arg.startsWith('-'));
  const wantsHelp = argv.includes('--help') || argv.includes('-h');
  const command = commands
    .filter((candidate) => candidate.path.every((word, index) => words[index] === word))
    .sort((a, b) => b.path.length - a.path.length)[0];
  if (!command) {
    if (wantsHelp || argv.length === 0) {
      context.out(helpText(words.slice(0, 1).filter((word) => commands.some((c) => c.path[0] === word))));
      return;
    }
    throw new CliError(`Unknown command: ${words.join(' ') || argv.join(' ')}\n\n${helpText([])}`, 2);
  }
  if (wantsHelp) {
    context.out(`Usage: npm run --silent cli -- ${command.usage}\n\n${command.summary}`);
    return;
  }
  let parsed;
  try {
    parsed = parseArgs({ args: argv.slice(command.path.length), options: command.options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new CliError(`${(error as Error).message}\nUsage: npm run --silent cli -- ${command.usage}`, 2);
  }
  await command.run({ positionals: parsed.positionals, values: parsed.values as Record<string, unknown> }, context);
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

async function main(): Promise<void> {
  let database: Database | undefined;
  let services: Services | undefined;
  try {
    const config = loadConfig(process.env);
    // Logs go to stderr so that --json output on stdout stays machine-readable.
    const log = createLogger(config.LOG_LEVEL === 'info' ? 'warn' : config.LOG_LEVEL, process.stderr as never);
    const context: CliContext = {
      config,
      log,
      async database() {
        if (!database) {
          database = await openDatabase(config, log);
          this.appliedMigrations = await migrate(database, undefined, { lockTimeoutMs: config.MIGRATION_LOCK_TIMEOUT_MS });
        }
        return database;
      },
      async services() {
        services ??= createServices({ db: await this.database(), config, log, secretsKey: resolveSecretsKey(config) });
        return services;
      },
      readStdin: () => readAll(process.stdin),
      out: (text) => process.stdout.write(`${text}\n`),
    };
    await runCli(process.argv.slice(2), context);
  } catch (error) {
    if (
      error instanceof CliError ||
      error instanceof ConfigError ||
      error instanceof DataDirInUseError ||
      error instanceof SecretsKeyError ||
      error instanceof MigrationError
    ) {
      process.stderr.write(`${error.message}\n`);
      process.exitCode = error instanceof CliError ? error.exitCode : error instanceof ConfigError ? 78 : 1;
    } else {
      process.stderr.write(`Error: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exitCode = 1;
    }
  } finally {
    await database?.close().catch(() => undefined);
  }
}

// Imported by tests for runCli; run only as the entry point.
const entry = process.argv[1];
if (entry && import.meta.url === pathToFileURL(realpathSync(entry)).href) await main();
