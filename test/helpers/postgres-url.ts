// Which PostgreSQL the tests use, if any: a Citus coordinator (CITUS_URL), else TEST_DATABASE_URL (or DATABASE_URL);
// none set means PGlite in memory.
export function postgresTestUrl(): string | undefined {
  return process.env.CITUS_URL || process.env.TEST_DATABASE_URL || process.env.DATABASE_URL || undefined;
}

/** The same server with another database name (the template, or a test file's own database). */
export function adminUrl(url: string, database?: string): string {
  const parsed = new URL(url);
  if (database) parsed.pathname = `/${database}`;
  return parsed.toString();
}
