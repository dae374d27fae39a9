-- Operator API: secured objects (locks), mobile devices, tickets, and Idempotency-Key records (contract 4, 7).

CREATE TABLE secured_objects (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  id text NOT NULL,
  channels text[] NOT NULL,
  local_name text NOT NULL,
  uuid uuid NOT NULL,
  created_at bigint NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX secured_objects_page_idx ON secured_objects (tenant_id, created_at, id);

CREATE TABLE mobile_devices (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  id text NOT NULL,
  name text,
  created_at bigint NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX mobile_devices_page_idx ON mobile_devices (tenant_id, created_at, id);

-- A ticket outlives its lock and device: removing either revokes it, and it stays readable as REVOKED.
-- Its status is derived (REVOKED when revoked_at is set, EXPIRED when end_date has passed), never stored.
CREATE TABLE tickets (
  id uuid PRIMARY KEY,
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  secured_object_id text NOT NULL,
  mobile_device_id text NOT NULL,
  begin_date bigint NOT NULL,
  end_date bigint NOT NULL,
  created_at bigint NOT NULL,
  commands text[] NOT NULL,
  channels text[] NOT NULL,
  revoked_at bigint,
  downloaded_at bigint,
  CHECK (begin_date >= 0 AND begin_date < end_date AND end_date <= 8640000000000000)
);
-- Keyset pages (contract 7.3) in creation order, overall and per filter: a page costs the same at any table size.
CREATE INDEX tickets_page_idx ON tickets (tenant_id, created_at, id);
CREATE INDEX tickets_device_page_idx ON tickets (tenant_id, mobile_device_id, created_at, id);
CREATE INDEX tickets_object_page_idx ON tickets (tenant_id, secured_object_id, created_at, id);

-- Idempotency-Key (contract 4.3): the first response to a key is kept for 24 h and replayed to repeats.
CREATE TABLE idempotency_keys (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  key text NOT NULL,
  request_hash bytea NOT NULL,
  created_at bigint NOT NULL,
  expires_at bigint NOT NULL,
  -- NULL while the first request is still running.
  response_status integer,
  response_headers jsonb,
  response_body text,
  PRIMARY KEY (tenant_id, key)
);
CREATE INDEX idempotency_keys_expiry_idx ON idempotency_keys (expires_at);
