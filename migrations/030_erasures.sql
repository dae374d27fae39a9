-- Erasure of a person's data on request (docs/api-reference.md 16.2): the record of each request. It names the person
-- only by an id the tenant already holds (a resident's, a device's, a user's), never by a name, and keeps what was
-- done: how many rows of each table. `event_cursor` is how far the pass over the tenant's events has come, so that an
-- erasure an instance did not finish is resumed where it stopped (`lease_until`: the instance working on it).
CREATE TABLE erasures (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  id uuid NOT NULL,
  subject_kind text NOT NULL CHECK (subject_kind IN ('resident', 'mobile-device', 'user')),
  subject_id text NOT NULL,
  access_logs_only boolean NOT NULL,
  requested_by text NOT NULL,
  request_id text,
  requested_at bigint NOT NULL,
  state text NOT NULL CHECK (state IN ('running', 'succeeded')),
  event_cursor bigint NOT NULL DEFAULT 0,
  rows_changed jsonb NOT NULL DEFAULT '{}'::jsonb,
  lease_until bigint NOT NULL DEFAULT 0,
  finished_at bigint,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX erasures_running_idx ON erasures (tenant_id, lease_until) WHERE state = 'running';
