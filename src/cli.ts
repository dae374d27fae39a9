// The command line (contract 2): `npm run --silent cli -- COMMAND …`. It calls services, never SQL.
import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { Logger } from 'pino';
import { ConfigError, loadConfig, type Config } from './config.js';
import type { Database } from './db/database.js';
import { migrate } from './db/migrate.js';
import { openDatabase } from './db/open.js';
import { DataDirInUseError } from './db/pglite.js';
import { createLogger } from './logger.js';

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
      const db = await context.database();
      const applied = await migrate(db);
      context.out(values.json ? JSON.stringify({ applied }) : applied.length ? `Applied: ${applied.join(', ')}` : 'Up to date.');
    },
  },
];

export function registerCommand(command: Command): void {
  commands.push(command);
}

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
          await migrate(database);
        }
        return database;
      },
      readStdin: () => readAll(process.stdin),
      out: (text) => process.stdout.write(`${text}\n`),
    };
    await runCli(process.argv.slice(2), context);
  } catch (error) {
    if (error instanceof CliError || error instanceof ConfigError || error instanceof DataDirInUseError) {
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
