-- Access logs stay bounded (docs/api-reference.md 8.5): each lock's uploads share one budget of new entries a minute,
-- and entries older than ACCESS_LOG_RETENTION_DAYS are pruned, so no uploader can grow the database without bound.

-- The budget's window, one row per lock id of a tenant. A row of its own, not a column of lock_telemetry: a phone's
-- report (migration 021) is charged too, and it must not make the lock look seen. The upload row-locks it (after the
-- lock's row, before its entries), so the count holds across instances and two uploads of one lock never both take
-- the last of it.
CREATE TABLE access_log_budgets (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  secured_object_id text NOT NULL,
  window_started_at bigint NOT NULL,
  window_entries integer NOT NULL,
  PRIMARY KEY (tenant_id, secured_object_id)
);
COMMENT ON COLUMN access_log_budgets.window_started_at IS 'When the lock''s current minute of access-log budget began (ms).';
COMMENT ON COLUMN access_log_budgets.window_entries IS 'New access-log entries stored for the lock since window_started_at, by every uploader together.';

-- The retention prune deletes a tenant's oldest entries by the server's receipt time, a bounded batch at a time: a range
-- scan of this index from its start. Never by lock_time, which the lock (or a relaying phone) states and may forge.
CREATE INDEX access_log_entries_received_idx ON access_log_entries (tenant_id, received_at);
