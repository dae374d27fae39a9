-- Mutual authentication at the door (docs/api-reference.md 11): the phone's and the lock's own public keys, the
-- holder-binding policy, the single-use nonces of key proofs and the single-use ids of client assertions, and the
-- revoked phone keys that locks must learn.

-- 11.1: one active key per phone and per lock, a P-256 public JWK (kty, crv, x, y) and its RFC 7638 SHA-256
-- thumbprint. The service never holds a private key of either.
ALTER TABLE mobile_devices
  ADD COLUMN public_key jsonb,
  ADD COLUMN key_thumbprint text,
  ADD COLUMN key_registered_at bigint,
  -- The latest `exp` of a credential bound to the current key (raised at each download): how long a revocation of
  -- the key must stay on the locks' lists (docs/api-reference.md 11.4).
  ADD COLUMN key_bound_until bigint,
  ADD CHECK ((public_key IS NULL) = (key_thumbprint IS NULL) AND (public_key IS NULL) = (key_registered_at IS NULL));
CREATE UNIQUE INDEX mobile_devices_key_idx ON mobile_devices (tenant_id, key_thumbprint) WHERE key_thumbprint IS NOT NULL;

ALTER TABLE secured_objects
  ADD COLUMN public_key jsonb,
  ADD COLUMN key_thumbprint text,
  ADD COLUMN key_registered_at bigint,
  -- NULL: the tenant's policy applies (docs/api-reference.md 11.2).
  ADD COLUMN holder_binding text CHECK (holder_binding IN ('optional', 'required')),
  ADD CHECK ((public_key IS NULL) = (key_thumbprint IS NULL) AND (public_key IS NULL) = (key_registered_at IS NULL));

-- 11.2: the tenant's policy, read by every lock that has no override.
ALTER TABLE tenants
  ADD COLUMN holder_binding text NOT NULL DEFAULT 'optional' CHECK (holder_binding IN ('optional', 'required'));

-- 11.1: `POST /deviceapi/nonces`. Single use (deleted when used), bound to the client that asked, for 5 minutes.
CREATE TABLE key_proof_nonces (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  nonce text NOT NULL,
  client_id text NOT NULL,
  expires_at bigint NOT NULL,
  PRIMARY KEY (tenant_id, nonce)
);
CREATE INDEX key_proof_nonces_expiry_idx ON key_proof_nonces (tenant_id, expires_at);

-- 11.1: a `private_key_jwt` client assertion's `jti` is used once (RFC 7523 3, item 7); kept until the assertion's
-- `exp`, after which the assertion is refused anyway. Shared by every instance through the database.
CREATE TABLE client_assertion_ids (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  client_id text NOT NULL,
  jti text NOT NULL,
  expires_at bigint NOT NULL,
  PRIMARY KEY (tenant_id, client_id, jti)
);
CREATE INDEX client_assertion_ids_expiry_idx ON client_assertion_ids (tenant_id, expires_at);

-- 11.4: a phone key that was replaced, removed, or whose device was deleted. Every lock of the tenant learns it
-- through sync (in change-log order, `change_seq` from the tenant's counter) and revocation lists, while a credential
-- bound to it may be alive (`bound_until`); a key never bound to a credential needs no entry at all.
CREATE TABLE revoked_device_keys (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  key_thumbprint text NOT NULL,
  mobile_device_id text NOT NULL,
  revoked_at bigint NOT NULL,
  bound_until bigint NOT NULL,
  change_seq bigint NOT NULL,
  PRIMARY KEY (tenant_id, key_thumbprint)
);
CREATE INDEX revoked_device_keys_sync_idx ON revoked_device_keys (tenant_id, change_seq);
CREATE INDEX revoked_device_keys_alive_idx ON revoked_device_keys (tenant_id, bound_until);
