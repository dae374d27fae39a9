-- The event log's types take the contract's names (docs/api-reference.md 10), and a ticket's history is found by its id.

-- Rows written before the rename carry the old actions; the audit view and the feed show one vocabulary.
UPDATE audit_events SET action = CASE action
    WHEN 'ticket_key.rotated' THEN 'key.rotated'
    WHEN 'resident.member_added' THEN 'resident.device_added'
    WHEN 'resident.member_removed' THEN 'resident.device_removed'
    WHEN 'lock_group.member_added' THEN 'lock_group.lock_added'
    WHEN 'lock_group.member_removed' THEN 'lock_group.lock_removed'
  END
 WHERE action IN ('ticket_key.rotated', 'resident.member_added', 'resident.member_removed', 'lock_group.member_added',
                  'lock_group.member_removed');

-- Fan-out changes write their tickets' events in chunks of up to 1,000 ids (`data.ticketIds`), so `?target=ticket:ID`
-- (docs/api-reference.md 7.5) finds a ticket's creation and revocation by containment in that array. jsonb_path_ops keeps
-- one hashed entry per id, and the pending list (fastupdate) makes a grant's 100 rows of 1,000 ids one cheap append.
CREATE INDEX audit_events_ticket_ids_idx ON audit_events USING gin ((data -> 'ticketIds') jsonb_path_ops);

-- Retention (EVENT_RETENTION_DAYS) deletes the oldest events of every tenant in bounded batches.
CREATE INDEX audit_events_time_idx ON audit_events (time);
