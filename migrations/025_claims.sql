-- Enrolment by claim links (docs/api-reference.md 12): a claim puts a resident's phone (or one device's) in service with
-- the phone's own key and a bound client that has no secret.

-- A client made by a claim authenticates only with private_key_jwt (docs/api-reference.md 11.1): it has no secret at
-- all, so client_secret_basic and client_secret_post can never succeed for it (client.service.ts).
ALTER TABLE oauth_clients ALTER COLUMN secret_hash DROP NOT NULL;

-- The phone presents only the code, which names no tenant: the SHA-256 of the code leads to its tenant and claim in this
-- reference table (as client_tenants does for client ids, docs/scaling.md), then the claim is read within its tenant.
-- The code is a 256-bit random secret, so a fast hash is enough (as for client secrets, migration 002).
CREATE TABLE claim_codes (
  code_hash bytea PRIMARY KEY,
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  claim_id uuid NOT NULL,
  UNIQUE (tenant_id, code_hash)
);

-- One claim: for a resident (a new device joins it at each redemption, up to max_devices) or for one existing device
-- (its key and a bound client). `state` is stored as it last changed; a claim past `expires_at` in `created` or `opened`
-- is expired whether or not the sweep has marked it yet (claim.service.ts).
CREATE TABLE claims (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  id uuid NOT NULL,
  code_hash bytea NOT NULL,
  resident_id uuid,
  mobile_device_id text,
  -- A device of the resident that the first redemption removes (docs/api-reference.md 12, "replaces").
  replaces text,
  note text,
  max_devices integer NOT NULL CHECK (max_devices BETWEEN 1 AND 5),
  state text NOT NULL CHECK (state IN ('created', 'opened', 'claimed', 'expired', 'revoked')),
  -- The devices put in service by this claim, in the order they were claimed.
  device_ids text[] NOT NULL DEFAULT '{}',
  created_at bigint NOT NULL,
  expires_at bigint NOT NULL,
  opened_at bigint,
  ended_at bigint,
  PRIMARY KEY (tenant_id, id),
  CHECK ((resident_id IS NULL) <> (mobile_device_id IS NULL)),
  CHECK (replaces IS NULL OR resident_id IS NOT NULL),
  FOREIGN KEY (tenant_id, code_hash) REFERENCES claim_codes (tenant_id, code_hash),
  -- A claim goes with its resident or device: there is nothing left to enrol into.
  FOREIGN KEY (tenant_id, resident_id) REFERENCES residents (tenant_id, id) ON DELETE CASCADE,
  FOREIGN KEY (tenant_id, mobile_device_id) REFERENCES mobile_devices (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX claims_page_idx ON claims (tenant_id, created_at, id);
CREATE INDEX claims_resident_idx ON claims (tenant_id, resident_id, created_at, id);
CREATE INDEX claims_device_idx ON claims (tenant_id, mobile_device_id, created_at, id);
CREATE INDEX claims_code_idx ON claims (tenant_id, code_hash);
-- The sweep finds the claims that ran out while still open (claim.service.ts).
CREATE INDEX claims_open_expiry_idx ON claims (tenant_id, expires_at) WHERE state IN ('created', 'opened');
