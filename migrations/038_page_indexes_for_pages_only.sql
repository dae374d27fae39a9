-- A look-up by key takes the primary key, whatever the statistics say (docs/scaling.md, "Plans that hold without fresh
-- statistics"). Each of these tables has its primary key on (tenant_id, id) and a page index on (tenant_id, created_at,
-- id) for keyset pages (docs/api-reference.md 7.3). A look-up `tenant_id = $1 AND id = $2` can be served by either, the
-- page index by scanning the tenant's entries for the id. For a tenant the statistics do not know (one that had no rows
-- when ANALYZE last ran, while every tenant that had was among the column's common values: a new tenant, typically)
-- the planner expects one row, so both indexes cost the same, and PostgreSQL keeps the one it weighed first. It weighs
-- a table's indexes newest first, and keeps that order on purpose; on seven of these tables the page index was the
-- newest (on access_permissions and claims other indexes led by tenant_id are newer still; docs/scaling.md). Measured:
-- with a new tenant's 10,000 locks, each look-up of one lock read 63 index pages instead of 3, and a statement that
-- looks up each lock of a lockdown or a lock group read the tenant's locks once per lock.
--
-- Each page index is now partial, on a condition every row meets (created_at is a bigint, never below its least value)
-- and that a look-up by key does not name: the planner may use a partial index only for a statement whose conditions
-- imply its predicate, so it never weighs these for a look-up. keysetPage (src/shared/keyset.ts) and every other
-- statement that reads a tenant's rows in page order name the condition (PAGE_INDEX_CONDITION). `IS NOT NULL` would
-- read better, but recent PostgreSQL versions drop that condition on a NOT NULL column while planning, and one of them
-- then could not match a statement to such an index. On tickets and oauth_clients the primary key was the newer index;
-- a REINDEX CONCURRENTLY of the page index would have turned that round.
--
-- Each index is built beside the old one first, then the old ones are dropped and the new ones take their names, last:
-- a build takes its table's SHARE lock (reads go on, writes wait), a DROP INDEX takes ACCESS EXCLUSIVE (reads wait
-- too), and the migration's transaction holds both until it commits, so reads wait only for the drops and renames at
-- the end. Writes to these tables wait for the whole migration (measured: 0.2 s to build the index of 300,000
-- tickets); docs/scaling.md, "Migrations and table locks".
CREATE INDEX secured_objects_page_idx_038 ON secured_objects (tenant_id, created_at, id) WHERE created_at >= '-9223372036854775808'::bigint;
CREATE INDEX mobile_devices_page_idx_038 ON mobile_devices (tenant_id, created_at, id) WHERE created_at >= '-9223372036854775808'::bigint;
CREATE INDEX tickets_page_idx_038 ON tickets (tenant_id, created_at, id) WHERE created_at >= '-9223372036854775808'::bigint;
CREATE INDEX residents_page_idx_038 ON residents (tenant_id, created_at, id) WHERE created_at >= '-9223372036854775808'::bigint;
CREATE INDEX lock_groups_page_idx_038 ON lock_groups (tenant_id, created_at, id) WHERE created_at >= '-9223372036854775808'::bigint;
CREATE INDEX access_permissions_page_idx_038 ON access_permissions (tenant_id, created_at, id) WHERE created_at >= '-9223372036854775808'::bigint;
CREATE INDEX oauth_clients_tenant_idx_038 ON oauth_clients (tenant_id, created_at, client_id) WHERE created_at >= '-9223372036854775808'::bigint;
CREATE INDEX webhooks_tenant_page_idx_038 ON webhooks (tenant_id, created_at, id) WHERE created_at >= '-9223372036854775808'::bigint;
CREATE INDEX claims_page_idx_038 ON claims (tenant_id, created_at, id) WHERE created_at >= '-9223372036854775808'::bigint;
CREATE INDEX jobs_tenant_page_idx_038 ON jobs (tenant_id, created_at, id) WHERE created_at >= '-9223372036854775808'::bigint;
CREATE INDEX lockdowns_page_idx_038 ON lockdowns (tenant_id, created_at, id) WHERE created_at >= '-9223372036854775808'::bigint;
DROP INDEX secured_objects_page_idx;
ALTER INDEX secured_objects_page_idx_038 RENAME TO secured_objects_page_idx;
DROP INDEX mobile_devices_page_idx;
ALTER INDEX mobile_devices_page_idx_038 RENAME TO mobile_devices_page_idx;
DROP INDEX tickets_page_idx;
ALTER INDEX tickets_page_idx_038 RENAME TO tickets_page_idx;
DROP INDEX residents_page_idx;
ALTER INDEX residents_page_idx_038 RENAME TO residents_page_idx;
DROP INDEX lock_groups_page_idx;
ALTER INDEX lock_groups_page_idx_038 RENAME TO lock_groups_page_idx;
DROP INDEX access_permissions_page_idx;
ALTER INDEX access_permissions_page_idx_038 RENAME TO access_permissions_page_idx;
DROP INDEX oauth_clients_tenant_idx;
ALTER INDEX oauth_clients_tenant_idx_038 RENAME TO oauth_clients_tenant_idx;
DROP INDEX webhooks_tenant_page_idx;
ALTER INDEX webhooks_tenant_page_idx_038 RENAME TO webhooks_tenant_page_idx;
DROP INDEX claims_page_idx;
ALTER INDEX claims_page_idx_038 RENAME TO claims_page_idx;
DROP INDEX jobs_tenant_page_idx;
ALTER INDEX jobs_tenant_page_idx_038 RENAME TO jobs_tenant_page_idx;
DROP INDEX lockdowns_page_idx;
ALTER INDEX lockdowns_page_idx_038 RENAME TO lockdowns_page_idx;
