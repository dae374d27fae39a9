-- Lock telemetry (docs/api-reference.md 8.4, 8.5): how far the backend's truth has reached each lock, and what the locks
-- report back (their access logs and their clocks).

-- One row per lock id of a tenant, written when the lock is seen (a sync, a log upload). It outlives a deletion of the
-- lock: the deleted lock's client still syncs the revocations the deletion caused (docs/api-reference.md 4.1) and the door
-- may open until it has applied them. Registering the id again starts the row anew (another lock).
CREATE TABLE lock_telemetry (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  secured_object_id text NOT NULL,
  last_seen_at bigint NOT NULL,
  applied_through bigint NOT NULL DEFAULT 0,
  clock_offset_ms bigint,
  clock_checked_at bigint,
  log_high bigint,
  PRIMARY KEY (tenant_id, secured_object_id)
);
COMMENT ON COLUMN lock_telemetry.last_seen_at IS 'When a sync or log upload for the lock last reached the server (ms).';
COMMENT ON COLUMN lock_telemetry.applied_through IS 'The change-log position the lock has applied everything up to (docs/api-reference.md 8.4); never lowered.';
COMMENT ON COLUMN lock_telemetry.clock_offset_ms IS 'The lock''s clock minus the server''s (ms), estimated from the last upload''s lockTime (docs/api-reference.md 8.5).';
COMMENT ON COLUMN lock_telemetry.log_high IS 'The highest access-log entryNo stored for the lock: where the next gap starts.';

-- docs/api-reference.md 8.4: when the ticket's lock applied its revocation. The revocations a lock has not applied yet are an
-- index range of exactly those (a lock with 100k tickets and nothing pending counts nothing): a ticket never downloaded
-- needs no revocation at the lock (docs/api-reference.md 8.2), and an applied one leaves the index.
ALTER TABLE tickets ADD COLUMN revocation_applied_at bigint;
CREATE INDEX tickets_pending_revocations_idx ON tickets (tenant_id, secured_object_id, credential_expires_at)
  INCLUDE (change_seq)
  WHERE revoked_at IS NOT NULL AND revocation_applied_at IS NULL AND credential_expires_at IS NOT NULL;

-- docs/api-reference.md 8.5: what locks report, idempotent on (lock, entryNo). A lock deleted and registered again with the
-- same id is another lock counting from its own first entry, so the registration's time is part of the key.
CREATE TABLE access_log_entries (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  secured_object_id text NOT NULL,
  lock_registered_at bigint NOT NULL,
  entry_no bigint NOT NULL,
  lock_time bigint NOT NULL,
  token_id text,
  mobile_device_id text,
  command text NOT NULL,
  channel text NOT NULL,
  result text NOT NULL CHECK (result IN ('granted', 'denied')),
  reason text,
  received_at bigint NOT NULL,
  via text NOT NULL,
  clock_offset_ms bigint,
  PRIMARY KEY (tenant_id, secured_object_id, lock_registered_at, entry_no)
);
COMMENT ON COLUMN access_log_entries.mobile_device_id IS 'The device of the ticket token_id names, when it is a ticket of the tenant for this lock.';
COMMENT ON COLUMN access_log_entries.via IS '''lock'' (uploaded by the lock''s client) or the id of the phone that relayed it.';
-- The operator's pages (docs/api-reference.md 7.3, 8.5) in (lock_time, lock, entry_no, registration) order: one index per
-- filter that names few rows of many (time range, lock, phone, credential), each ending in that order so a page is one
-- range scan. `result` has two values and is filtered on the way; an upload maintains these and the key, nothing more.
CREATE INDEX access_log_entries_time_idx ON access_log_entries (tenant_id, lock_time, secured_object_id, entry_no, lock_registered_at);
CREATE INDEX access_log_entries_lock_idx ON access_log_entries (tenant_id, secured_object_id, lock_time, entry_no, lock_registered_at);
CREATE INDEX access_log_entries_device_idx ON access_log_entries (tenant_id, mobile_device_id, lock_time, secured_object_id, entry_no, lock_registered_at)
  WHERE mobile_device_id IS NOT NULL;
CREATE INDEX access_log_entries_token_idx ON access_log_entries (tenant_id, token_id, lock_time, secured_object_id, entry_no, lock_registered_at)
  WHERE token_id IS NOT NULL;
