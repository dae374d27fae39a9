-- Idempotency-Key records per client (contract 4.3) and a per-tenant audit sequence (contract 7.5).

-- A key names one client's request: per tenant, one client could claim another client's key, or be answered the
-- other client's stored response. The records made so far do not say which client sent them; they are a 24 h cache
-- of retries, so they are dropped rather than guessed at (a retry that spans this upgrade runs again).
DELETE FROM idempotency_keys;
ALTER TABLE idempotency_keys ADD COLUMN client_id text NOT NULL;
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey;
ALTER TABLE idempotency_keys ADD PRIMARY KEY (tenant_id, client_id, key);

-- The event id the API shows is the tenant's own number, 1, 2, 3, ... without gaps: one sequence for all tenants let
-- a tenant count the others' activity in the gaps. Like tenant_change_counters (005), one row per tenant, bumped in
-- the transaction of the change and row-locked until it commits: a tenant's events commit in number order, so a
-- reader that has seen number N has seen everything before it. Every transaction takes this counter AFTER the
-- tenant's change counter and after its other row locks (audit.repo.ts), so the lock order is the same everywhere.
CREATE TABLE tenant_audit_counters (
  tenant_id uuid PRIMARY KEY REFERENCES tenants (id),
  last_seq bigint NOT NULL
);

-- No default: a write path that forgot to number its event fails instead of leaving a gap. The global `id` stays
-- as the row's internal identity; the API never shows it.
ALTER TABLE audit_events ADD COLUMN seq bigint;
UPDATE audit_events e SET seq = numbered.seq
  FROM (SELECT id, row_number() OVER (PARTITION BY tenant_id ORDER BY id) AS seq FROM audit_events) numbered
 WHERE e.id = numbered.id;
ALTER TABLE audit_events ALTER COLUMN seq SET NOT NULL;
INSERT INTO tenant_audit_counters (tenant_id, last_seq) SELECT tenant_id, max(seq) FROM audit_events GROUP BY tenant_id;

-- Keyset pages (contract 7.3) run on (tenant, seq), overall and by target.
DROP INDEX audit_events_tenant_idx;
DROP INDEX audit_events_target_idx;
CREATE UNIQUE INDEX audit_events_tenant_seq_idx ON audit_events (tenant_id, seq);
CREATE INDEX audit_events_target_idx ON audit_events (tenant_id, target, seq);
