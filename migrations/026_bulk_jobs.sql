-- Bulk jobs (docs/api-reference.md 14): a request stores its parsed items, a worker in some instance applies them
-- under a lease, and each item's outcome is written in the transaction that applies it, so it is applied at most once.
CREATE TABLE jobs (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  id uuid NOT NULL,
  type text NOT NULL CHECK (type IN ('secured-objects', 'mobile-devices', 'residents', 'lock-groups', 'access-permissions', 'tickets')),
  state text NOT NULL CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
  total integer NOT NULL,
  processed integer NOT NULL DEFAULT 0,
  succeeded integer NOT NULL DEFAULT 0,
  failed integer NOT NULL DEFAULT 0,
  -- Who sent it and in which request: the items' audit events name them, as the single-item endpoints' would.
  actor text NOT NULL,
  request_id text,
  created_at bigint NOT NULL,
  started_at bigint,
  finished_at bigint,
  -- The lease: the instance running the job holds it until lease_until; each claim bumps `claim`, and an item is
  -- recorded only while the claim is still the one it was applied under.
  lease_until bigint,
  claim integer NOT NULL DEFAULT 0,
  PRIMARY KEY (tenant_id, id),
  CHECK (processed = succeeded + failed AND processed <= total)
);
COMMENT ON TABLE jobs IS 'Bulk jobs (docs/api-reference.md 14): one row per POST /operatorapi/jobs, with its progress and lease.';
CREATE INDEX jobs_tenant_page_idx ON jobs (tenant_id, created_at, id);
-- The worker looks only at jobs still to run.
CREATE INDEX jobs_pending_idx ON jobs (created_at) WHERE state IN ('queued', 'running');

-- One row per item: what was sent, and once it ran, its outcome. `outcome IS NULL` is an item still to run.
CREATE TABLE job_items (
  tenant_id uuid NOT NULL,
  job_id uuid NOT NULL,
  item_index integer NOT NULL,
  key text NOT NULL,
  item jsonb NOT NULL,
  outcome text CHECK (outcome IN ('created', 'updated', 'unchanged', 'failed')),
  resource_id text,
  problem jsonb,
  PRIMARY KEY (tenant_id, job_id, item_index),
  FOREIGN KEY (tenant_id, job_id) REFERENCES jobs (tenant_id, id) ON DELETE CASCADE,
  CHECK ((outcome = 'failed') = (problem IS NOT NULL))
);
COMMENT ON TABLE job_items IS 'The items of a bulk job and their outcomes (docs/api-reference.md 14).';
CREATE INDEX job_items_pending_idx ON job_items (tenant_id, job_id, item_index) WHERE outcome IS NULL;
