-- Device API (contract 6): the per-tenant change log behind lock sync, and cached ticket credentials.

-- One counter per tenant. Every transaction that creates or revokes tickets takes the next value FIRST (a row
-- lock held to commit), stamps its tickets with it, and so commits in sequence order: a lock that has seen
-- sequence N has seen everything before N.
CREATE TABLE tenant_change_counters (
  tenant_id uuid PRIMARY KEY REFERENCES tenants (id),
  last_seq bigint NOT NULL
);

-- The change that last touched the ticket (its creation, or its revocation). No default: a write path that forgot
-- to stamp its tickets fails loudly instead of hiding them from lock sync.
ALTER TABLE tickets ADD COLUMN change_seq bigint NOT NULL DEFAULT 0;
ALTER TABLE tickets ALTER COLUMN change_seq DROP DEFAULT;
CREATE INDEX tickets_sync_idx ON tickets (tenant_id, secured_object_id, change_seq, id);

-- The signed credential (contract 6.3), made at the first download and reused after.
ALTER TABLE tickets ADD COLUMN credential text;
