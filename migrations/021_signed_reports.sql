-- What a lock says and what a phone says about it (docs/api-reference.md 8.5, "Signed receipts"): an access-log entry is
-- the lock's own word (uploaded by the lock's client, or in a receipt signed with the lock's key) or a phone's report.
-- Only the lock's word is numbered in the lock's numbering; each relaying phone's reports are numbered apart, so no
-- relay can claim the lock's future entry numbers or move its high mark.

-- `numbering`: 'lock', or 'phone:' and the relaying phone's id (the prefix keeps a phone whose id is "lock" out of the
-- lock's numbering). `signed`: the entry is the lock's own word; true exactly in the lock's numbering.
ALTER TABLE access_log_entries
  ADD COLUMN numbering text NOT NULL DEFAULT 'lock',
  ADD COLUMN signed boolean NOT NULL DEFAULT true;

-- Phones relayed unsigned entries until now: each moves to its phone's numbering, as a report.
UPDATE access_log_entries SET numbering = 'phone:' || via, signed = false WHERE via <> 'lock';

-- Every writer names both from here on: no default can make a report the lock's word.
ALTER TABLE access_log_entries
  ALTER COLUMN numbering DROP DEFAULT,
  ALTER COLUMN signed DROP DEFAULT,
  ADD CONSTRAINT access_log_entries_signed_check CHECK (signed = (numbering = 'lock')),
  DROP CONSTRAINT access_log_entries_pkey,
  ADD PRIMARY KEY (tenant_id, secured_object_id, lock_registered_at, numbering, entry_no);

-- The high mark (where the next gap starts) counts the lock's numbering only, for the lock as registered now (or, for
-- a deleted lock's id, its last registration).
UPDATE lock_telemetry lt SET log_high = (
  SELECT max(e.entry_no) FROM access_log_entries e
   WHERE e.tenant_id = lt.tenant_id AND e.secured_object_id = lt.secured_object_id AND e.numbering = 'lock'
     AND e.lock_registered_at = coalesce(
           (SELECT so.created_at FROM secured_objects so WHERE so.tenant_id = lt.tenant_id AND so.id = lt.secured_object_id),
           (SELECT max(r.lock_registered_at) FROM access_log_entries r
             WHERE r.tenant_id = lt.tenant_id AND r.secured_object_id = lt.secured_object_id)));

-- The operator's pages (docs/api-reference.md 7.3, 8.5) now order by (lock_time, lock, entry_no, registration,
-- numbering): one lock's entry number may be stored once per numbering. Each index ends in that order again, so a
-- page stays one range scan wherever it starts.
DROP INDEX access_log_entries_time_idx;
DROP INDEX access_log_entries_lock_idx;
DROP INDEX access_log_entries_device_idx;
DROP INDEX access_log_entries_token_idx;
CREATE INDEX access_log_entries_time_idx ON access_log_entries (tenant_id, lock_time, secured_object_id, entry_no, lock_registered_at, numbering);
CREATE INDEX access_log_entries_lock_idx ON access_log_entries (tenant_id, secured_object_id, lock_time, entry_no, lock_registered_at, numbering);
CREATE INDEX access_log_entries_device_idx ON access_log_entries (tenant_id, mobile_device_id, lock_time, secured_object_id, entry_no, lock_registered_at, numbering)
  WHERE mobile_device_id IS NOT NULL;
CREATE INDEX access_log_entries_token_idx ON access_log_entries (tenant_id, token_id, lock_time, secured_object_id, entry_no, lock_registered_at, numbering)
  WHERE token_id IS NOT NULL;

COMMENT ON COLUMN access_log_entries.numbering IS '''lock'' (the lock''s own word) or ''phone:'' and the id of the phone that relayed the report.';
COMMENT ON COLUMN access_log_entries.signed IS 'The lock''s own word: uploaded by the lock''s client or in a receipt verified with the lock''s key.';
