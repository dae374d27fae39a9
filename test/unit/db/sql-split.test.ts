// The migration splitter: one statement per query (docs/scaling.md), with quotes, dollar quotes and comments respected.
import { describe, expect, it } from 'vitest';
import { MigrationError, migrationStatements, readMigrations } from '../../../src/db/migrate.js';
import { SqlSplitError, splitSqlStatements } from '../../../src/db/sql-split.js';

describe('splitSqlStatements', () => {
  it('splits at each semicolon between statements, trimmed, without the semicolon', () => {
    expect(splitSqlStatements('CREATE TABLE a (x int);\nCREATE INDEX a_x ON a (x);  \n\nDROP TABLE b')).toEqual([
      'CREATE TABLE a (x int)',
      'CREATE INDEX a_x ON a (x)',
      'DROP TABLE b',
    ]);
  });

  it('keeps semicolons inside string constants, doubled quotes included', () => {
    expect(splitSqlStatements("INSERT INTO t VALUES ('a;b', 'it''s; fine');SELECT 1")).toEqual([
      "INSERT INTO t VALUES ('a;b', 'it''s; fine')",
      'SELECT 1',
    ]);
  });

  it('reads backslash escapes in E strings only', () => {
    expect(splitSqlStatements("SELECT E'a\\';b';SELECT 'c\\';SELECT 2")).toEqual(["SELECT E'a\\';b'", "SELECT 'c\\'", 'SELECT 2']);
    expect(splitSqlStatements("SELECT e'x\\\\';SELECT 3")).toEqual(["SELECT e'x\\\\'", 'SELECT 3']);
    // A name ending in e is no E string: the backslash is an ordinary character there.
    expect(splitSqlStatements("SELECT some'\\';SELECT 4")).toEqual(["SELECT some'\\'", 'SELECT 4']);
  });

  it('keeps semicolons inside quoted identifiers', () => {
    expect(splitSqlStatements('CREATE TABLE "a;b" ("c"";d" int);SELECT 1')).toEqual(['CREATE TABLE "a;b" ("c"";d" int)', 'SELECT 1']);
  });

  it('keeps dollar-quoted bodies whole, with or without a tag, and tags nested inside another tag', () => {
    const fn = `CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('c', 'x;y');
  RETURN NULL;
END;
$$`;
    const tagged = "DO $body$ BEGIN EXECUTE $q$SELECT ';'$q$; PERFORM $$;$$; END $body$";
    expect(splitSqlStatements(`${fn};\n${tagged};\nSELECT 1;`)).toEqual([fn, tagged, 'SELECT 1']);
  });

  it('does not take a parameter or a name with a dollar for a dollar quote', () => {
    expect(splitSqlStatements('SELECT $1, a$b$c FROM t;SELECT 2')).toEqual(['SELECT $1, a$b$c FROM t', 'SELECT 2']);
  });

  it('ignores semicolons in line and nested block comments, and drops a trailing comment', () => {
    const sql = `-- first; a comment
CREATE TABLE a (x int); /* a block; /* nested; */ still; */ CREATE TABLE b (y int) -- b;
;
-- the end; nothing after
/* nor here; */`;
    expect(splitSqlStatements(sql)).toEqual([
      '-- first; a comment\nCREATE TABLE a (x int)',
      '/* a block; /* nested; */ still; */ CREATE TABLE b (y int) -- b;',
    ]);
  });

  it('returns nothing for an empty or comment-only text, and skips empty statements', () => {
    expect(splitSqlStatements('')).toEqual([]);
    expect(splitSqlStatements('-- only a comment\n')).toEqual([]);
    expect(splitSqlStatements(';;SELECT 1;;')).toEqual(['SELECT 1']);
  });

  it('refuses what it cannot split safely, saying why', () => {
    expect(() => splitSqlStatements("SELECT 'open")).toThrow(new SqlSplitError('A string is not closed.'));
    expect(() => splitSqlStatements('SELECT "open')).toThrow(new SqlSplitError('A quoted identifier is not closed.'));
    expect(() => splitSqlStatements('SELECT $x$ open')).toThrow(new SqlSplitError('A $x$-quoted body is not closed.'));
    expect(() => splitSqlStatements('SELECT 1 /* open')).toThrow(new SqlSplitError('A /* comment is not closed.'));
    expect(() =>
      splitSqlStatements('CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; END;'),
    ).toThrow(/BEGIN ATOMIC/);
  });
});

describe('the migrations, statement by statement', () => {
  const migrations = readMigrations();

  it('splits every migration file into statements that each hold SQL, the files themselves unchanged', () => {
    for (const migration of migrations) {
      const statements = migrationStatements(migration);
      expect(statements.length, migration.name).toBeGreaterThan(0);
      for (const statement of statements) {
        expect(statement, migration.name).not.toMatch(/;\s*$/);
        // Every statement holds something besides comments: its first word after them is an SQL keyword.
        expect(statement.replace(/^(\s*--[^\n]*\n)+/, '').trimStart(), migration.name).toMatch(/^[A-Z]+\b/);
      }
      // Each piece is a part of the file as written: nothing rewritten, nothing lost but the separators.
      let position = 0;
      for (const statement of statements) {
        const found = migration.sql.indexOf(statement, position);
        expect(found, `${migration.name}: ${statement.slice(0, 60)}`).toBeGreaterThanOrEqual(position);
        position = found + statement.length;
      }
    }
    // Migration 017's trigger function keeps its semicolons inside $$: one CREATE FUNCTION and one CREATE TRIGGER.
    const notify = migrations.find((migration) => migration.version === 17)!;
    expect(migrationStatements(notify).map((statement) => statement.replace(/^(\s*--[^\n]*\n)+/, '').split(/\s/)[1])).toEqual([
      'FUNCTION',
      'TRIGGER',
    ]);
  });

  it('names the migration a file that cannot be split comes from', () => {
    expect(() => migrationStatements({ version: 999, name: 'broken', sql: "SELECT 'x", checksum: '' })).toThrow(
      new MigrationError("Migration 999_broken cannot be read: A string is not closed."),
    );
  });
});
