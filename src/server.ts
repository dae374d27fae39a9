// Process entry: loadConfig(process.env) → open the database → migrate → buildApp → listen; graceful shutdown.
import closeWithGrace from 'close-with-grace';
import { buildApp } from './app.js';
import { ConfigError, checkListener, loadConfig, type Config } from './config.js';
import { migrate } from './db/migrate.js';
import { openDatabase } from './db/open.js';
import { createLogger } from './logger.js';
import { listenForMetrics } from './plugins/metrics-listener.js';
import { resolveSecretsKey } from './services/keys/secrets-key-source.js';

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig(process.env);
    checkListener(config, process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw error;
  }
  const log = createLogger(config.LOG_LEVEL);

  const secretsKey = resolveSecretsKey(config);
  if (secretsKey.previous.length > 0) {
    log.warn(
      { previousKeys: secretsKey.previous.length },
      'SECRETS_KEY_PREVIOUS is set: once every server runs with the new SECRETS_KEY, run `acs secrets-key reencrypt`, then remove it',
    );
  }
  const db = await openDatabase(config, log);
  let app: Awaited<ReturnType<typeof buildApp>> | undefined;
  try {
    const applied = await migrate(db, undefined, { lockTimeoutMs: config.MIGRATION_LOCK_TIMEOUT_MS });
    if (applied.length > 0) log.info({ applied }, 'migrations applied');
    app = await buildApp(config, { db, log, secretsKey });
  } catch (error) {
    await db.close().catch(() => undefined);
    throw error;
  }
  const running = app;
  let metricsListener: Awaited<ReturnType<typeof listenForMetrics>> | undefined;

  // SIGTERM/SIGINT: stop accepting, let in-flight requests finish, close the database (the app's onClose).
  closeWithGrace({ delay: config.SHUTDOWN_TIMEOUT_MS, logger: log }, async ({ signal, err }) => {
    if (err) log.error({ err }, 'shutting down after an error');
    else log.info({ signal }, 'shutting down');
    await metricsListener?.close();
    await running.close();
  });

  await running.listen({ port: config.PORT, host: config.HOST });
  const metricsPort = config.METRICS_PORT;
  if (metricsPort !== undefined) metricsListener = await listenForMetrics(running.metrics, { ...config, METRICS_PORT: metricsPort }, log);
  stopWhenOrphaned();
}

/**
 * `npm start` runs this process under npm. A signal to npm reaches it (the start script `exec`s node, so no shell sits
 * between them), but npm killed outright (SIGKILL) forwards nothing, and the server would keep the port and the embedded
 * database as an orphan. So under npm it stops gracefully once its parent is gone. Elsewhere (a container's PID 1, a
 * service manager) the parent never changes and this does nothing.
 */
function stopWhenOrphaned(): void {
  if (process.env.npm_lifecycle_event !== 'start') return;
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) process.kill(process.pid, 'SIGTERM');
  }, 1000).unref();
}

main().catch((error: unknown) => {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`Cannot start: ${message}\n`);
  process.exit(1);
});
