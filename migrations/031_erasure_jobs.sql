-- An erasure is a bulk job (docs/api-reference.md 14, 16.2): `POST /operatorapi/erasures` answers a job of type
-- `erasure`, with one item (the person, by id), that the erasure service runs in bounded transactions of its own; the
-- bulk-job worker leaves it alone. Its record in `erasures` (migration 030) keeps what was done per table.
ALTER TABLE jobs DROP CONSTRAINT jobs_type_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_type_check
  CHECK (type IN ('secured-objects', 'mobile-devices', 'residents', 'lock-groups', 'access-permissions', 'tickets', 'erasure'));
