// How many sessions of the test's database wait for a row lock another holds: on a Citus coordinator the waits are on
// the workers, which citus_stat_activity gathers from every node; on PostgreSQL they are this server's own.
import { citusTestUrl } from './citus.js';

export const LOCK_WAITS_SQL = citusTestUrl()
  ? `SELECT count(*)::int AS n FROM citus_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`
  : `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`;
