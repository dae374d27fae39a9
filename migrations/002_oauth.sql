-- OAuth 2.0: clients, users, refresh tokens, signing keys, revocations, login lockout, and the audit trail.
-- Times are Unix milliseconds (bigint), as in the API (seed section 8).

CREATE TABLE oauth_clients (
  client_id text PRIMARY KEY,
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  name text NOT NULL,
  -- SHA-256 of a 256-bit random secret: a fast hash is enough for a secret that cannot be guessed.
  secret_hash bytea NOT NULL,
  scopes text[] NOT NULL,
  mobile_device_id text,
  secured_object_id text,
  created_at bigint NOT NULL,
  CHECK (mobile_device_id IS NULL OR secured_object_id IS NULL)
);
CREATE INDEX oauth_clients_tenant_idx ON oauth_clients (tenant_id, created_at, client_id);

CREATE TABLE users (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  username text NOT NULL,
  password_hash text NOT NULL,
  created_at bigint NOT NULL,
  UNIQUE (tenant_id, username)
);

-- Opaque refresh tokens, stored only as SHA-256 hashes; rotated on every use (RFC 9700 4.14.2).
CREATE TABLE refresh_tokens (
  token_hash bytea PRIMARY KEY,
  family_id uuid NOT NULL,
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  client_id text NOT NULL REFERENCES oauth_clients (client_id) ON DELETE CASCADE,
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  scopes text[] NOT NULL,
  created_at bigint NOT NULL,
  expires_at bigint NOT NULL,
  used_at bigint,
  revoked_at bigint
);
CREATE INDEX refresh_tokens_family_idx ON refresh_tokens (family_id);

-- Asymmetric signing keys; the private half is AES-256-GCM encrypted with SECRETS_KEY.
-- tenant_id NULL: the server's access-token keys; a tenant: that tenant's ticket-credential keys.
CREATE TABLE signing_keys (
  kid text PRIMARY KEY,
  tenant_id uuid REFERENCES tenants (id),
  purpose text NOT NULL CHECK (purpose IN ('access_token', 'ticket')),
  alg text NOT NULL,
  public_jwk jsonb NOT NULL,
  private_jwk_encrypted bytea NOT NULL,
  created_at bigint NOT NULL,
  -- Set when a newer key takes over signing; the public key stays published until its tokens have expired.
  retired_at bigint
);
CREATE INDEX signing_keys_purpose_idx ON signing_keys (purpose, tenant_id, created_at);

-- Revoked access-token subjects, read by every instance into memory (bearer checks never query per request).
-- kind: 'client' (deleted client), 'user' (deleted user), 'family' (refresh family), 'jti' (one token).
CREATE TABLE token_revocations (
  seq bigserial PRIMARY KEY,
  kind text NOT NULL CHECK (kind IN ('client', 'user', 'family', 'jti')),
  subject text NOT NULL,
  revoked_at bigint NOT NULL,
  -- After this no access token it affects can still be valid, so the row can be forgotten.
  expires_at bigint NOT NULL
);
CREATE INDEX token_revocations_expiry_idx ON token_revocations (expires_at);

-- Failed password grants per `user@tenant` string (also for names that do not exist, so nothing is revealed).
CREATE TABLE login_failures (
  login text PRIMARY KEY,
  failures integer NOT NULL,
  first_failure_at bigint NOT NULL,
  locked_until bigint
);

-- Contract 7.5: every change appends one event, in the same transaction as the change.
CREATE TABLE audit_events (
  id bigserial PRIMARY KEY,
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  time bigint NOT NULL,
  actor text NOT NULL,
  action text NOT NULL,
  target text NOT NULL,
  request_id text
);
CREATE INDEX audit_events_tenant_idx ON audit_events (tenant_id, id);
CREATE INDEX audit_events_target_idx ON audit_events (tenant_id, target, id);
