-- Lockdowns (docs/api-reference.md 15): a tenant's or a lock group's locks refuse every credential but those of
-- override tickets, the state reaching each lock as a signed lock state (docs/lock-integration.md 11) through its sync
-- and through every phone that visits it.

-- docs/api-reference.md 4.3: a ticket made with `override` opens during a lockdown; its credentials carry `ovr`.
ALTER TABLE tickets ADD COLUMN override boolean NOT NULL DEFAULT false;

-- One row per start or end. `change_seq` is the tenant change-log position it took: the serial of the lock state it
-- gave each of its locks, so a lock's serial only rises. No foreign key to the lock group: the record outlives it.
CREATE TABLE lockdowns (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  id uuid NOT NULL,
  lock_group_id uuid,
  mode text NOT NULL CHECK (mode IN ('lockdown', 'normal')),
  reason text NOT NULL,
  created_at bigint NOT NULL,
  actor text NOT NULL,
  change_seq bigint NOT NULL,
  lock_count integer NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX lockdowns_page_idx ON lockdowns (tenant_id, created_at, id);
COMMENT ON COLUMN lockdowns.lock_group_id IS 'The lock group it was started for; NULL: every lock of the tenant.';
COMMENT ON COLUMN lockdowns.change_seq IS 'The tenant change-log position it took: the serial of the lock state it gave its locks.';

-- The locks a lockdown reached, written with it in one INSERT … SELECT (the locks in scope at that moment). A lock's
-- current state is its newest row (lockdown_locks_lock_idx read backwards, one row); none: normal, serial 0.
CREATE TABLE lockdown_locks (
  tenant_id uuid NOT NULL,
  lockdown_id uuid NOT NULL,
  secured_object_id text NOT NULL,
  mode text NOT NULL CHECK (mode IN ('lockdown', 'normal')),
  change_seq bigint NOT NULL,
  PRIMARY KEY (tenant_id, lockdown_id, secured_object_id),
  FOREIGN KEY (tenant_id, lockdown_id) REFERENCES lockdowns (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX lockdown_locks_lock_idx ON lockdown_locks (tenant_id, secured_object_id, change_seq);
