-- Schedules in the lock's local time (docs/api-reference.md 9): a lock's IANA time zone, and the weekly schedule of a ticket
-- or of an access permission (copied to the tickets it expands into). The schedule is kept as the operator sent it
-- (validated by src/shared/schedule.ts); a credential carries it expanded into UTC intervals (`win`), computed when
-- it is signed, so the lock needs no time-zone rules.
ALTER TABLE secured_objects ADD COLUMN time_zone text NOT NULL DEFAULT 'UTC';
COMMENT ON COLUMN secured_objects.time_zone IS 'IANA time-zone name the lock''s schedules are read in (docs/api-reference.md 9).';
ALTER TABLE tickets ADD COLUMN schedule jsonb;
COMMENT ON COLUMN tickets.schedule IS 'docs/api-reference.md 9: {weekly: [{days, from, to}], except?}; NULL: no schedule (open all through [beginDate, endDate)).';
ALTER TABLE access_permissions ADD COLUMN schedule jsonb;
COMMENT ON COLUMN access_permissions.schedule IS 'docs/api-reference.md 9: copied to every ticket the permission expands into.';
