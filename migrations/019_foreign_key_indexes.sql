-- Deleting a client or a user cascades to its refresh tokens (migration 016's foreign keys), and PostgreSQL finds the
-- referencing rows by the foreign key's columns: without an index that leads with them, every such delete scans the
-- whole refresh_tokens table under the delete's lock. test/db/citus-ready.test.ts now fails on any foreign key no index
-- serves. tenant_id first, as every tenant-owned index (docs/scaling.md). refresh_tokens is written by token grants,
-- never by a lock's sync, so the build's SHARE lock (bounded by the migration's lock_timeout) stalls no door.
CREATE INDEX refresh_tokens_client_idx ON refresh_tokens (tenant_id, client_id);
CREATE INDEX refresh_tokens_user_idx ON refresh_tokens (tenant_id, user_id);
