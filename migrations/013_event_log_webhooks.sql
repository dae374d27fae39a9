-- The event log and its webhook subscriptions (docs/api-reference.md 10).

-- The audit trail (docs/api-reference.md 7.5) becomes the tenant's event log: one append-only record written in the
-- transaction of the change, numbered per tenant by `seq` without gaps and committed in number order (migration 008).
-- `event_id` is the id an event is delivered under (the Standard Webhooks `webhook-id`, the same on every retry and
-- replay); `data` is what an integrator reacts to (the ids a change touched). The audit view shows the same rows.
ALTER TABLE audit_events ADD COLUMN event_id uuid NOT NULL DEFAULT gen_random_uuid();
ALTER TABLE audit_events ADD COLUMN data jsonb NOT NULL DEFAULT '{}'::jsonb;
CREATE UNIQUE INDEX audit_events_event_id_idx ON audit_events (tenant_id, event_id);

-- Webhook subscriptions and their deliveries. The events they deliver are the rows of `audit_events` above.

-- A subscription. Its secret signs every delivery (Standard Webhooks), so it is kept sealed under SECRETS_KEY
-- (AES-256-GCM, bound to the row by its additional data), never hashed. During a rotation the previous secret keeps
-- signing beside the new one until `previous_secret_until`.
-- `dispatched_through` is the tenant sequence number up to which the subscription's deliveries have been created:
-- it moves only in the transaction that creates them, so a committed event is never skipped (at least once). A
-- disabled subscription is paused: nothing is dispatched or sent until it is enabled again, and then nothing is lost.
CREATE TABLE webhooks (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  id uuid NOT NULL,
  url text NOT NULL,
  event_types text[] NOT NULL,
  description text,
  enabled boolean NOT NULL DEFAULT true,
  disabled_reason text CHECK (disabled_reason IN ('operator', 'gone', 'failing')),
  disabled_at bigint,
  secret_sealed bytea NOT NULL,
  previous_secret_sealed bytea,
  previous_secret_until bigint,
  dispatched_through bigint NOT NULL,
  failing_since bigint,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  PRIMARY KEY (tenant_id, id),
  CHECK ((previous_secret_sealed IS NULL) = (previous_secret_until IS NULL)),
  CHECK (enabled = (disabled_reason IS NULL))
);
CREATE INDEX webhooks_tenant_page_idx ON webhooks (tenant_id, created_at, id);
-- The dispatcher looks only at enabled subscriptions whose tenant has events past their position.
CREATE INDEX webhooks_dispatch_idx ON webhooks (tenant_id, dispatched_through) WHERE enabled;

-- One event to one subscription: created by the dispatcher (or a replay), then claimed by a worker with
-- FOR UPDATE SKIP LOCKED. A claim pushes `next_attempt_at` forward by a lease longer than the request timeout, so a
-- worker that dies mid-attempt leaves a delivery that becomes due again (at least once, the same webhook-id), and two
-- workers never hold one attempt. `attempts` counts claims: a worker records its outcome only if nobody claimed the
-- delivery after it.
CREATE TABLE webhook_deliveries (
  tenant_id uuid NOT NULL,
  webhook_id uuid NOT NULL,
  event_seq bigint NOT NULL,
  state text NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at bigint,
  created_at bigint NOT NULL,
  PRIMARY KEY (tenant_id, webhook_id, event_seq),
  FOREIGN KEY (tenant_id, webhook_id) REFERENCES webhooks (tenant_id, id) ON DELETE CASCADE,
  FOREIGN KEY (tenant_id, event_seq) REFERENCES audit_events (tenant_id, seq) ON DELETE CASCADE,
  CHECK ((state = 'pending') = (next_attempt_at IS NOT NULL))
);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (tenant_id, event_seq);

-- Every attempt, as `GET /operatorapi/webhooks/{id}/deliveries` pages them: an event's or a test ping's. `event_id` is
-- the `webhook-id` sent (the event's id; a ping has its own). Kept as long as events are (EVENT_RETENTION_DAYS).
CREATE TABLE webhook_attempts (
  tenant_id uuid NOT NULL,
  webhook_id uuid NOT NULL,
  id bigserial NOT NULL,
  event_id uuid NOT NULL,
  time bigint NOT NULL,
  status_code integer,
  error text,
  duration_ms integer NOT NULL,
  next_attempt_at bigint,
  PRIMARY KEY (tenant_id, webhook_id, id),
  FOREIGN KEY (tenant_id, webhook_id) REFERENCES webhooks (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX webhook_attempts_time_idx ON webhook_attempts (time);
