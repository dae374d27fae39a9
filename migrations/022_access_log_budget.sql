-- Access logs stay bounded (docs/api-reference.md 8.5): each lock's uploads share one budget of new entries a minute,
-- and entries older than ACCESS_LOG_RETENTION_DAYS are pruned, so no uploader can grow the database without bound.

-- The budget's window lives on the lock's telemetry row, which every upload already upserts and row-locks first
-- (src/db/repositories/lock-telemetry.repo.ts): the count is charged in the upload's own transaction, so it holds
-- across instances and two uploads of one lock never both take the last of it. A constant default adds no rewrite.
ALTER TABLE lock_telemetry
  ADD COLUMN log_window_started_at bigint,
  ADD COLUMN log_window_entries integer NOT NULL DEFAULT 0;
COMMENT ON COLUMN lock_telemetry.log_window_started_at IS 'When the lock''s current minute of access-log budget began (ms); null: no entry stored yet.';
COMMENT ON COLUMN lock_telemetry.log_window_entries IS 'New access-log entries stored for the lock since log_window_started_at, by every uploader together.';

-- The retention prune deletes a tenant's oldest entries by the server's receipt time, a bounded batch at a time: a range
-- scan of this index from its start. Never by lock_time, which the lock (or a relaying phone) states and may forge.
CREATE INDEX access_log_entries_received_idx ON access_log_entries (tenant_id, received_at);
