-- docs/api-reference.md 3.8 and 13: sign-in to the operator console with the authorization code grant and PKCE
-- (RFC 6749 4.1, RFC 7636): public clients, their registered redirect URI, user roles, and authorization codes.

-- A public client (RFC 6749 2.1) has no secret. Harmless when another migration dropped the constraint already.
ALTER TABLE oauth_clients ALTER COLUMN secret_hash DROP NOT NULL;
-- The one redirect URI a client registered (RFC 9700 2.1: compared exactly). A value starting with `/` is relative to
-- PUBLIC_URL, so the console's client follows the server's public address without a migration of its own.
ALTER TABLE oauth_clients ADD COLUMN redirect_uri text;

-- docs/api-reference.md 13: a user's role decides the scopes of its console sign-in; no role, no sign-in.
ALTER TABLE users ADD COLUMN role text CHECK (role IN ('admin', 'operator', 'viewer'));

-- Authorization codes (RFC 6749 4.1.2): random, stored only as SHA-256 digests, single use, valid 60 s, bound to
-- the client, the redirect URI, the user and the PKCE challenge. `family_id` is the refresh-token family the exchange
-- starts: a code presented twice revokes it (RFC 9700 4.2.1, RFC 6749 4.1.2).
CREATE TABLE authorization_codes (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  code_hash bytea NOT NULL,
  client_id text NOT NULL,
  user_id uuid NOT NULL,
  redirect_uri text NOT NULL,
  code_challenge text NOT NULL,
  family_id uuid NOT NULL,
  created_at bigint NOT NULL,
  expires_at bigint NOT NULL,
  used_at bigint,
  PRIMARY KEY (tenant_id, code_hash),
  FOREIGN KEY (tenant_id, client_id) REFERENCES oauth_clients (tenant_id, client_id) ON DELETE CASCADE,
  FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX authorization_codes_expiry_idx ON authorization_codes (tenant_id, expires_at);
CREATE INDEX authorization_codes_client_idx ON authorization_codes (tenant_id, client_id);
CREATE INDEX authorization_codes_user_idx ON authorization_codes (tenant_id, user_id);

-- The console's public client for every tenant that has none (`tenant create` makes it for new ones). Its id is
-- entered in the client directory first (migration 016), then the client, found again by its `console-` prefix.
INSERT INTO client_tenants (client_id, tenant_id)
SELECT 'console-' || replace(gen_random_uuid()::text, '-', ''), t.id
  FROM tenants t
 WHERE NOT EXISTS (SELECT 1 FROM oauth_clients c WHERE c.tenant_id = t.id AND c.redirect_uri = '/console/callback');

INSERT INTO oauth_clients (client_id, tenant_id, name, secret_hash, scopes, mobile_device_id, secured_object_id, created_at, redirect_uri)
SELECT d.client_id, d.tenant_id, 'Operator console', NULL,
       ARRAY['tokens:create', 'tokens:read', 'tokens:delete', 'devices:read', 'devices:write', 'clients:manage',
             'users:manage', 'audit:read', 'events:read', 'webhooks:manage', 'keys:rotate', 'settings:manage',
             'nfc-token-writer', 'device-groups:write', 'device-groups:read', 'access-permissions:read',
             'access-permissions:write', 'lockdown:manage'],
       NULL, NULL, (extract(epoch FROM now()) * 1000)::bigint, '/console/callback'
  FROM client_tenants d
 WHERE d.client_id LIKE 'console-%'
   AND NOT EXISTS (SELECT 1 FROM oauth_clients c WHERE c.tenant_id = d.tenant_id AND c.client_id = d.client_id);
