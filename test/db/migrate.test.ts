// The migration runner on temporary migration directories: order, ledger, checksums, rollback, concurrent starts.
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/database.js';
import pg from 'pg';
import { DEFAULT_MIGRATION_LOCK_TIMEOUT_MS, MigrationError, migrate, migrationsCurrent, readMigrations } from '../../src/db/migrate.js';
import { createPostgresDatabase } from '../../src/db/postgres.js';
import { createLogger } from '../../src/logger.js';
import { createEmptyTestDatabase, createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { postgresTestUrl } from '../helpers/postgres-url.js';
import { temporaryDirectory } from '../helpers/process.js';

// Versions far above the real migrations/ and tables prefixed `mt_`, so nothing clashes with the schema.
const directories: { remove(): void }[] = [];

/** A temporary migrations directory holding `files` (name → SQL). */
function migrationDirectory(files: Record<string, string>): string {
  const directory = temporaryDirectory('acs-migrations-');
  directories.push(directory);
  for (const [name, sql] of Object.entries(files)) writeFileSync(join(directory.path, name), sql);
  return directory.path;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

async function ledger(db: Database, from: number, to: number) {
  const { rows } = await db.query<{ version: number; name: string; checksum: string }>(
    'SELECT version, name, checksum FROM schema_migrations WHERE version BETWEEN $1 AND $2 ORDER BY version',
    [from, to],
  );
  return rows;
}

async function tableExists(db: Database, name: string): Promise<boolean> {
  const { rows } = await db.query<{ exists: boolean }>('SELECT to_regclass($1) IS NOT NULL AS exists', [name]);
  return rows[0]!.exists;
}

/** `work` on another session of the test database, in a transaction it opens and rolls back once `work` is done. */
async function inOtherSession(url: string | undefined, work: (other: pg.Client) => Promise<void>): Promise<void> {
  const other = new pg.Client({ connectionString: url });
  await other.connect();
  try {
    await other.query('BEGIN');
    await work(other);
  } finally {
    await other.query('ROLLBACK').catch(() => undefined);
    await other.end();
  }
}

/** What `promise` rejected with; null when it resolved. */
function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => null,
    (caught: unknown) => caught,
  );
}

describe('migrate', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(async () => {
    await t.db.close();
    for (const directory of directories) directory.remove();
  });

  it('reads NNN_name.sql files in numeric order, ignoring other files', () => {
    // Lexically 9100_ sorts before 910_; numerically 910 comes first.
    const directory = migrationDirectory({
      '9100_second.sql': 'SELECT 2;',
      '910_first.sql': 'SELECT 1;',
      'README.md': 'not a migration',
    });
    const migrations = readMigrations(directory);
    expect(migrations.map((m) => [m.version, m.name])).toEqual([
      [910, 'first'],
      [9100, 'second'],
    ]);
    expect(migrations[0]!.checksum).toBe(sha256('SELECT 1;'));
    expect(migrations[0]!.sql).toBe('SELECT 1;');
  });

  it('applies migrations in numeric order and records each with its checksum', async () => {
    const files = {
      '9110_log_more.sql': "INSERT INTO mt_order (label) VALUES ('9110');",
      '911_create_log.sql': "CREATE TABLE mt_order (n serial PRIMARY KEY, label text NOT NULL);\nINSERT INTO mt_order (label) VALUES ('911');",
    };
    const migrations = readMigrations(migrationDirectory(files));

    const applied = await migrate(t.db, migrations);

    expect(applied).toEqual([911, 9110]);
    const { rows } = await t.db.query<{ label: string }>('SELECT label FROM mt_order ORDER BY n');
    expect(rows.map((row) => row.label)).toEqual(['911', '9110']);
    expect(await ledger(t.db, 911, 9110)).toEqual([
      { version: 911, name: 'create_log', checksum: sha256(files['911_create_log.sql']) },
      { version: 9110, name: 'log_more', checksum: sha256(files['9110_log_more.sql']) },
    ]);
    expect(await migrationsCurrent(t.db, migrations)).toBe(true);
  });

  it('applies nothing on a second run', async () => {
    const migrations = readMigrations(
      migrationDirectory({
        '920_create.sql': 'CREATE TABLE mt_idempotent (id integer);',
        '921_insert.sql': 'INSERT INTO mt_idempotent VALUES (1);',
      }),
    );
    expect(await migrate(t.db, migrations)).toEqual([920, 921]);
    const before = await t.db.query('SELECT version, applied_at FROM schema_migrations WHERE version IN (920, 921) ORDER BY version');

    expect(await migrate(t.db, migrations)).toEqual([]);

    const { rows } = await t.db.query<{ count: number }>('SELECT count(*)::int AS count FROM mt_idempotent');
    expect(rows[0]!.count).toBe(1);
    const after = await t.db.query('SELECT version, applied_at FROM schema_migrations WHERE version IN (920, 921) ORDER BY version');
    expect(after.rows).toEqual(before.rows);
  });

  it('applies only what is new when a migration is added later', async () => {
    const first = { '925_create.sql': 'CREATE TABLE mt_added (id integer);' };
    expect(await migrate(t.db, readMigrations(migrationDirectory(first)))).toEqual([925]);
    const both = readMigrations(migrationDirectory({ ...first, '926_insert.sql': 'INSERT INTO mt_added VALUES (7);' }));
    expect(await migrationsCurrent(t.db, both)).toBe(false);

    expect(await migrate(t.db, both)).toEqual([926]);

    expect((await t.db.query('SELECT id FROM mt_added')).rows).toEqual([{ id: 7 }]);
    expect(await migrationsCurrent(t.db, both)).toBe(true);
  });

  it('refuses to run when an applied migration was changed, naming it', async () => {
    const original = readMigrations(
      migrationDirectory({ '930_create.sql': 'CREATE TABLE mt_changed (id integer);' }),
    );
    expect(await migrate(t.db, original)).toEqual([930]);
    const changed = readMigrations(
      migrationDirectory({
        '930_create.sql': 'CREATE TABLE mt_changed (id integer, extra text);',
        '931_more.sql': 'CREATE TABLE mt_changed_more (id integer);',
      }),
    );

    const error = await rejectionOf(migrate(t.db, changed));

    expect(error).toBeInstanceOf(MigrationError);
    expect((error as Error).message).toMatch(/930_create was changed after it was applied/);
    expect((error as Error).message).toContain(original[0]!.checksum.slice(0, 12));
    // Nothing else ran: the check comes before any pending migration is applied.
    expect(await tableExists(t.db, 'mt_changed_more')).toBe(false);
    expect(await ledger(t.db, 930, 931)).toEqual([{ version: 930, name: 'create', checksum: original[0]!.checksum }]);
    expect(await migrationsCurrent(t.db, changed)).toBe(false);
  });

  it.each([
    ['no number', 'create_things.sql'],
    ['a short number', '12_things.sql'],
    ['upper case', '940_Things.sql'],
    ['a dash', '940_more-things.sql'],
    ['no name', '940.sql'],
  ])('refuses a migration file name with %s', (_case, file) => {
    const directory = migrationDirectory({ [file]: 'SELECT 1;', '941_fine.sql': 'SELECT 1;' });
    expect(() => readMigrations(directory)).toThrow(MigrationError);
    expect(() => readMigrations(directory)).toThrow(`Migration file name ${file} is not NNN_name.sql`);
  });

  it('refuses two migrations with the same version', () => {
    const directory = migrationDirectory({ '950_one.sql': 'SELECT 1;', '0950_two.sql': 'SELECT 2;' });
    expect(() => readMigrations(directory)).toThrow(/Two migrations share the version 950/);
  });

  it('rolls a failing migration back completely and does not record it', async () => {
    const migrations = readMigrations(
      migrationDirectory({
        '960_good.sql': 'CREATE TABLE mt_good (id integer);',
        '961_bad.sql': 'CREATE TABLE mt_partial (id integer);\nINSERT INTO mt_partial VALUES (1);\nSELECT * FROM mt_no_such_table;',
        '962_after.sql': 'CREATE TABLE mt_after (id integer);',
      }),
    );

    await expect(migrate(t.db, migrations)).rejects.toThrow(/mt_no_such_table/);

    expect(await tableExists(t.db, 'mt_good')).toBe(true);
    expect(await tableExists(t.db, 'mt_partial')).toBe(false);
    expect(await tableExists(t.db, 'mt_after')).toBe(false);
    expect((await ledger(t.db, 960, 962)).map((row) => row.version)).toEqual([960]);
    expect(await migrationsCurrent(t.db, migrations)).toBe(false);
    // The database is still usable after the failed transaction.
    expect((await t.db.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });

  it('finds the repository migrations already applied to a test database (a clone of the migrated template)', async () => {
    const migrations = readMigrations();
    expect(migrations.length).toBeGreaterThan(0);
    expect(await migrationsCurrent(t.db, migrations)).toBe(true);
    expect(await migrate(t.db, migrations)).toEqual([]);
  });
});

describe('migrate on concurrent starts', () => {
  let t: TestDatabase;
  const extra: Database[] = [];
  beforeAll(async () => {
    // Empty: not even the ledger exists, so the race includes creating it.
    t = await createEmptyTestDatabase();
  });
  afterEach(async () => {
    await Promise.all(extra.splice(0).map((db) => db.close()));
  });
  afterAll(async () => {
    await t.db.close();
    for (const directory of directories) directory.remove();
  });

  /** Another handle on the same database: a second pool on PostgreSQL (another process, in effect), the one PGlite again. */
  function anotherHandle(): Database {
    if (!t.url) return t.db;
    const db = createPostgresDatabase({
      connectionString: t.url,
      poolMax: 2,
      connectTimeoutMs: 5000,
      statementTimeoutMs: 30_000,
      log: createLogger('silent'),
    });
    extra.push(db);
    return db;
  }

  it('creates the ledger and applies each migration once when four instances race on an empty database', async () => {
    const migrations = readMigrations(
      migrationDirectory({
        '980_create.sql': 'CREATE TABLE mt_race (id integer NOT NULL);',
        '981_insert.sql': 'INSERT INTO mt_race VALUES (1);',
      }),
    );
    expect(await tableExists(t.db, 'schema_migrations')).toBe(false);
    const handles = [t.db, anotherHandle(), anotherHandle(), anotherHandle()];

    const results = await Promise.all(handles.map((db) => migrate(db, migrations)));

    expect(results.flat().sort((a, b) => a - b)).toEqual([980, 981]);
    const { rows } = await t.db.query<{ count: number }>('SELECT count(*)::int AS count FROM mt_race');
    expect(rows[0]!.count).toBe(1);
    expect((await ledger(t.db, 980, 981)).map((row) => row.version)).toEqual([980, 981]);
  });

  it('applies each migration exactly once when two instances migrate at the same moment', async () => {
    const migrations = readMigrations(
      migrationDirectory({
        '970_create.sql': 'CREATE TABLE mt_concurrent (id integer NOT NULL);',
        // Slow enough that the second instance arrives while the first holds the lock.
        '971_insert.sql': 'SELECT pg_sleep(0.2);\nINSERT INTO mt_concurrent VALUES (1);',
        '972_insert_more.sql': 'INSERT INTO mt_concurrent VALUES (2);',
      }),
    );
    const other = anotherHandle();

    const [first, second] = await Promise.all([migrate(t.db, migrations), migrate(other, migrations)]);

    // Each version was applied by exactly one of the two.
    expect([...first, ...second].sort((a, b) => a - b)).toEqual([970, 971, 972]);
    const { rows } = await t.db.query<{ id: number; count: number }>(
      'SELECT id, count(*)::int AS count FROM mt_concurrent GROUP BY id ORDER BY id',
    );
    expect(rows).toEqual([
      { id: 1, count: 1 },
      { id: 2, count: 1 },
    ]);
    expect((await ledger(t.db, 970, 972)).map((row) => row.version)).toEqual([970, 971, 972]);
  });
});

describe('migrate under lock_timeout', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(async () => {
    await t.db.close();
    for (const directory of directories) directory.remove();
  });

  it('runs every migration with lock_timeout set, 5 s unless told otherwise, and leaves the connection as it was', async () => {
    const migrations = readMigrations(
      migrationDirectory({
        '1000_default.sql': "CREATE TABLE mt_timeouts AS SELECT 1000 AS version, current_setting('lock_timeout') AS lock_timeout;",
      }),
    );
    expect(await migrate(t.db, migrations)).toEqual([1000]);
    const told = readMigrations(
      migrationDirectory({
        '1001_told.sql': "INSERT INTO mt_timeouts SELECT 1001, current_setting('lock_timeout');",
      }),
    );
    expect(await migrate(t.db, [...migrations, ...told], { lockTimeoutMs: 1500 })).toEqual([1001]);

    expect(DEFAULT_MIGRATION_LOCK_TIMEOUT_MS).toBe(5000);
    expect((await t.db.query('SELECT version, lock_timeout FROM mt_timeouts ORDER BY version')).rows).toEqual([
      { version: 1000, lock_timeout: '5s' },
      { version: 1001, lock_timeout: '1500ms' },
    ]);
    // SET LOCAL: outside the migration's transaction the server's own setting (none) holds again.
    const after = await t.db.transaction((tx) => tx.query<{ lock_timeout: string }>("SELECT current_setting('lock_timeout') AS lock_timeout"));
    expect(after.rows).toEqual([{ lock_timeout: '0' }]);
  });

  it('refuses a lock timeout that is not a whole number of milliseconds, before touching anything', async () => {
    const migrations = readMigrations(migrationDirectory({ '1010_never.sql': 'CREATE TABLE mt_never (id integer);' }));
    for (const lockTimeoutMs of [0, -1, 1.5, Number.NaN]) {
      await expect(migrate(t.db, migrations, { lockTimeoutMs })).rejects.toThrow(/must be a whole number of milliseconds/);
    }
    expect(await tableExists(t.db, 'mt_never')).toBe(false);
  });

  // PGlite has one connection, so nothing else can hold a lock there.
  it.runIf(postgresTestUrl() !== undefined)(
    'gives up waiting for a lock another session holds, says so, and applies nothing: not the migration, not its ledger row',
    async () => {
      await t.db.query('CREATE TABLE mt_busy (id integer NOT NULL)');
      await t.db.query('INSERT INTO mt_busy VALUES (1)');
      const migrations = readMigrations(
        migrationDirectory({
          '1020_first.sql': 'CREATE TABLE mt_before_busy (id integer);',
          // The first statement succeeds; the ALTER then waits for the lock the other session holds.
          '1021_alter_busy.sql': 'CREATE TABLE mt_half_done (id integer);\nALTER TABLE mt_busy ADD COLUMN note text;',
          '1022_after.sql': 'CREATE TABLE mt_after_busy (id integer);',
        }),
      );
      // Another session reads the table in an open transaction: its ACCESS SHARE lock blocks the ALTER's ACCESS EXCLUSIVE.
      await inOtherSession(t.url, async (other) => {
        await other.query('SELECT count(*) FROM mt_busy');

        const error = await rejectionOf(migrate(t.db, migrations, { lockTimeoutMs: 200 }));

        expect(error).toBeInstanceOf(MigrationError);
        expect((error as Error).message).toMatch(
          /^Migration 1021_alter_busy waited 200 ms for a table lock that another session holds \(.*lock timeout.*\), .*Nothing of it was applied\. Retry when that session has finished/,
        );
      });
      // The migration before it stands; of the failed one nothing is left, and nothing after it ran.
      expect((await ledger(t.db, 1020, 1022)).map((row) => row.version)).toEqual([1020]);
      expect(await tableExists(t.db, 'mt_half_done')).toBe(false);
      expect(await tableExists(t.db, 'mt_after_busy')).toBe(false);
      const { rows } = await t.db.query<{ column_name: string }>(
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'mt_busy' ORDER BY ordinal_position",
      );
      expect(rows.map((row) => row.column_name)).toEqual(['id']);

      // Once the other session is done, the retry applies the rest.
      expect(await migrate(t.db, migrations, { lockTimeoutMs: 200 })).toEqual([1021, 1022]);
      expect(await tableExists(t.db, 'mt_half_done')).toBe(true);
    },
  );

  // A migration that takes several tables' locks one after another (038) can meet a request holding one of them and
  // waiting for another: PostgreSQL's deadlock check, run by the session that waited first (the migration here, after
  // deadlock_timeout, 1 s by default), ends that session.
  it.runIf(postgresTestUrl() !== undefined)(
    'ended by PostgreSQL to break a deadlock, says so and to retry, and applies nothing',
    async () => {
      await t.db.query('CREATE TABLE mt_first (id integer NOT NULL)');
      await t.db.query('CREATE TABLE mt_second (id integer NOT NULL)');
      const migrations = readMigrations(
        migrationDirectory({
          '1030_both.sql': 'CREATE INDEX mt_first_idx ON mt_first (id);\nCREATE INDEX mt_second_idx ON mt_second (id);',
        }),
      );
      // Another session writes the second table in an open transaction: the migration's second index waits for it.
      await inOtherSession(t.url, async (other) => {
        await other.query('INSERT INTO mt_second VALUES (1)');
        const migrating = rejectionOf(migrate(t.db, migrations, { lockTimeoutMs: 30_000 }));
        // Once the migration holds the first table and waits for the second, the other session writes the first.
        for (;;) {
          const { rows } = await other.query<{ waiting: number }>(
            "SELECT count(*)::int AS waiting FROM pg_locks WHERE NOT granted AND relation = 'mt_second'::regclass",
          );
          if (rows[0]!.waiting > 0) break;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        const otherWrite = other.query('INSERT INTO mt_first VALUES (1)');

        const error = await migrating;
        expect(error).toBeInstanceOf(MigrationError);
        expect((error as Error).message).toMatch(
          /^Migration 1030_both was ended by PostgreSQL to break a deadlock with another session .*Nothing of it was applied\. Retry/,
        );
        // The other session's write went through once the migration's locks were gone.
        await otherWrite;
      });
      expect(await ledger(t.db, 1030, 1030)).toEqual([]);
      const { rows } = await t.db.query<{ indexname: string }>("SELECT indexname FROM pg_indexes WHERE tablename IN ('mt_first', 'mt_second')");
      expect(rows).toEqual([]);

      expect(await migrate(t.db, migrations, { lockTimeoutMs: 200 })).toEqual([1030]);
    },
  );
});

describe('the repository migrations', () => {
  it('apply in full to an empty database, and then there is nothing left to do', async () => {
    const migrations = readMigrations();
    const t = await createEmptyTestDatabase();
    try {
      expect(await migrate(t.db)).toEqual(migrations.map((m) => m.version));
      expect(await migrationsCurrent(t.db, migrations)).toBe(true);
      expect(await migrate(t.db)).toEqual([]);
    } finally {
      await t.db.close();
    }
  });
});
