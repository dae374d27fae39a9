-- Every tenant-owned table keyed by tenant (docs/scaling.md "Citus by tenant"): the tenant is part of every primary key,
-- unique index and foreign key, so the tables can be distributed by `tenant_id` without changing a key; the look-ups
-- that must work without knowing the tenant go through small reference tables. One transaction (the migration runner),
-- and it runs under the runner's lock_timeout: each ALTER below waits at most that long for its table.

-- The token endpoint learns a client's tenant from the client id alone (RFC 6749 2.3.1 authenticates by id and
-- secret): that look-up, and the rule that a client id is unique across tenants, move to a reference table, written in
-- the same transaction as the client (client.repo.ts). The foreign key below makes a client without its entry
-- impossible.
CREATE TABLE client_tenants (
  client_id text PRIMARY KEY,
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  UNIQUE (tenant_id, client_id)
);
INSERT INTO client_tenants (client_id, tenant_id) SELECT client_id, tenant_id FROM oauth_clients;

-- refresh_tokens points at the two global keys about to go.
ALTER TABLE refresh_tokens
  DROP CONSTRAINT refresh_tokens_client_id_fkey,
  DROP CONSTRAINT refresh_tokens_user_id_fkey;

ALTER TABLE oauth_clients
  DROP CONSTRAINT oauth_clients_pkey,
  ADD PRIMARY KEY (tenant_id, client_id),
  ADD CONSTRAINT oauth_clients_client_tenants_fkey FOREIGN KEY (tenant_id, client_id) REFERENCES client_tenants (tenant_id, client_id);

-- A user's id stays a random UUID; it is found by (tenant, id) or (tenant, username).
ALTER TABLE users
  DROP CONSTRAINT users_pkey,
  ADD PRIMARY KEY (tenant_id, id);

-- Every refresh-token look-up comes from an authenticated client, whose tenant is known (grants.service.ts,
-- revocation-introspection.service.ts), so the hash is found within the tenant. A refresh token was always issued to a
-- client and a user of its own tenant (grants.service.ts), so the rows already satisfy the new foreign keys.
ALTER TABLE refresh_tokens
  DROP CONSTRAINT refresh_tokens_pkey,
  ADD PRIMARY KEY (tenant_id, token_hash),
  ADD CONSTRAINT refresh_tokens_client_fkey FOREIGN KEY (tenant_id, client_id)
    REFERENCES oauth_clients (tenant_id, client_id) ON DELETE CASCADE,
  ADD CONSTRAINT refresh_tokens_user_fkey FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE;
DROP INDEX refresh_tokens_family_idx;
CREATE INDEX refresh_tokens_family_idx ON refresh_tokens (tenant_id, family_id);

-- A ticket is read by (tenant, id) everywhere (ticket.repo.ts), so the new key serves the same look-ups.
ALTER TABLE tickets
  DROP CONSTRAINT tickets_pkey,
  ADD PRIMARY KEY (tenant_id, id);
-- At most one live ticket per (permission, device, lock) (migration 004), now within the tenant; access-permission.repo.ts
-- names the same columns as its ON CONFLICT target.
DROP INDEX tickets_permission_pair_idx;
CREATE UNIQUE INDEX tickets_permission_pair_idx ON tickets (tenant_id, access_permission_id, mobile_device_id, secured_object_id)
  WHERE access_permission_id IS NOT NULL AND revoked_at IS NULL;

-- An event is the tenant's (tenant_id, seq) (migration 008), already unique: that index becomes the primary key, so the
-- webhook deliveries' foreign key to it stays as it is. `id` stays as a plain column, the global order rows were
-- appended in; nothing refers to it any more and it is unique nowhere.
ALTER TABLE audit_events DROP CONSTRAINT audit_events_pkey;
ALTER INDEX audit_events_tenant_seq_idx RENAME TO audit_events_pkey;
ALTER TABLE audit_events ADD CONSTRAINT audit_events_pkey PRIMARY KEY USING INDEX audit_events_pkey;
