-- docs/lock-sync.md: a tenant's new change number is announced by the application, not by a trigger. The service sends
-- `pg_notify('tenant_changes', '<last_seq>:<tenant_id>')` itself, on its own connection, once the transaction that
-- took the number has committed (src/db/postgres.ts); a rolled-back change announces nothing, as before. On a cluster
-- sharded by tenant the trigger ran on the node holding the tenant's counter, where no instance listens, and a NOTIFY
-- there stops that node's transaction from preparing for a two-phase commit (docs/scaling.md).
DROP TRIGGER IF EXISTS tenant_change_counters_announce ON tenant_change_counters;
DROP FUNCTION IF EXISTS announce_tenant_change();
