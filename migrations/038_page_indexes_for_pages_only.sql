-- A look-up by key takes the primary key, whatever the statistics say (docs/scaling.md, "Plans that hold without fresh
-- statistics"). Each of these tables has its primary key on (tenant_id, id) and a page index on (tenant_id, created_at,
-- id) for keyset pages (docs/api-reference.md 7.3). A look-up `tenant_id = $1 AND id = $2` can be served by either, the
-- page index by scanning the tenant's entries for the id. For a tenant the statistics do not know (one that had no rows
-- when ANALYZE last ran, while every tenant that had was among the column's common values: a new tenant, typically)
-- the planner expects one row, so both indexes cost the same, and PostgreSQL keeps the one it weighed first. It weighs
-- a table's indexes newest first, and keeps that order on purpose; for nine of these tables the page index is the
-- newer. Measured: with a new tenant's 10,000 locks, each look-up of one lock read 63 index pages instead of 3, and a
-- statement that looks up each lock of a lockdown or a lock group read the tenant's locks once per lock.
--
-- Each page index is now partial, on a condition every row meets (created_at is a bigint, never below its least value)
-- and that a look-up by key does not name: the planner may use a partial index only for a statement whose conditions
-- imply its predicate, so it never weighs these for a look-up. keysetPage (src/shared/keyset.ts) and every other
-- statement that reads a tenant's rows in page order name the condition (PAGE_INDEX_CONDITION). `IS NOT NULL` would
-- read better, but recent PostgreSQL versions drop that condition on a NOT NULL column while planning, and one of them
-- then could not match a statement to such an index. tickets and oauth_clients took their primary key until now only because it was
-- the newer index there; a REINDEX CONCURRENTLY of the page index would have turned that round.
--
-- Each index is built again, in the migration's transaction: writes to its table wait for the build (measured: 0.2 s
-- for 300,000 tickets).
DROP INDEX secured_objects_page_idx;
CREATE INDEX secured_objects_page_idx ON secured_objects (tenant_id, created_at, id) WHERE created_at >= '-9223372036854775808'::bigint;
DROP INDEX mobile_devices_page_idx;
CREATE INDEX mobile_devices_page_idx ON mobile_devices (tenant_id, created_at, id) WHERE created_at >= '-9223372036854775808'::bigint;
DROP INDEX tickets_page_idx;
CREATE INDEX tickets_page_idx ON tickets (tenant_id, created_at, id) WHERE created_at >= '-9223372036854775808'::bigint;
DROP INDEX residents_page_idx;
CREATE INDEX residents_page_idx ON residents (tenant_id, created_at, id) WHERE created_at >= '-9223372036854775808'::bigint;
DROP INDEX lock_groups_page_idx;
CREATE INDEX lock_groups_page_idx ON lock_groups (tenant_id, created_at, id) WHERE created_at >= '-9223372036854775808'::bigint;
DROP INDEX access_permissions_page_idx;
CREATE INDEX access_permissions_page_idx ON access_permissions (tenant_id, created_at, id) WHERE created_at >= '-9223372036854775808'::bigint;
DROP INDEX oauth_clients_tenant_idx;
CREATE INDEX oauth_clients_tenant_idx ON oauth_clients (tenant_id, created_at, client_id) WHERE created_at >= '-9223372036854775808'::bigint;
DROP INDEX webhooks_tenant_page_idx;
CREATE INDEX webhooks_tenant_page_idx ON webhooks (tenant_id, created_at, id) WHERE created_at >= '-9223372036854775808'::bigint;
DROP INDEX claims_page_idx;
CREATE INDEX claims_page_idx ON claims (tenant_id, created_at, id) WHERE created_at >= '-9223372036854775808'::bigint;
DROP INDEX jobs_tenant_page_idx;
CREATE INDEX jobs_tenant_page_idx ON jobs (tenant_id, created_at, id) WHERE created_at >= '-9223372036854775808'::bigint;
DROP INDEX lockdowns_page_idx;
CREATE INDEX lockdowns_page_idx ON lockdowns (tenant_id, created_at, id) WHERE created_at >= '-9223372036854775808'::bigint;
