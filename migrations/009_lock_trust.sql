-- Lock trust (docs/api-reference.md 8.1–8.3, 4.1, 4.2): credentials encrypted at rest with a bounded lifetime, ticket
-- keys announced before they sign, a per-tenant key-set position in the change log, decommissioned lock clients.

-- docs/security-cases.md G48: a signed credential is a working door key, so it is never stored in plain text.
-- The plain-text column goes; a credential cached in the old form is signed anew (bounded, tenant issuer) on the
-- next download. Its `exp` was the ticket's end, so that is kept as its expiry: the lock still needs a revocation
-- of such a ticket until then (docs/api-reference.md 8.2).
ALTER TABLE tickets
  ADD COLUMN credential_encrypted bytea,
  ADD COLUMN credential_kid text,
  ADD COLUMN credential_issued_at bigint,
  ADD COLUMN credential_expires_at bigint;
UPDATE tickets SET credential_expires_at = end_date WHERE credential IS NOT NULL;
ALTER TABLE tickets DROP COLUMN credential;
-- The revocations a lock still needs (docs/api-reference.md 8.2, 8.3): revoked tickets of a lock whose credential may
-- still be alive, found by an index range on the expiry instead of a scan of the lock's whole history.
CREATE INDEX tickets_alive_revocations_idx ON tickets (tenant_id, secured_object_id, credential_expires_at)
  WHERE revoked_at IS NOT NULL;
COMMENT ON COLUMN tickets.credential_encrypted IS 'The last credential handed out, AES-256-GCM under SECRETS_KEY.';
COMMENT ON COLUMN tickets.credential_expires_at IS 'The latest exp (ms) of any credential handed out for the ticket; never lowered. NULL: none was.';

-- docs/api-reference.md 8.1: a new ticket key is published from its creation and signs from `activates_at` (one
-- credential lifetime later, or at once in an emergency). `retired_at`: when a newer key took over signing (may lie
-- ahead while a successor is announced). `withdrawn_at`: dropped from publication at once (a leaked key).
ALTER TABLE signing_keys ADD COLUMN activates_at bigint, ADD COLUMN withdrawn_at bigint;
UPDATE signing_keys SET activates_at = created_at;
ALTER TABLE signing_keys ALTER COLUMN activates_at SET NOT NULL;

-- docs/api-reference.md 8.1: the change-log position (tenant_change_counters) of the tenant's last ticket-key-set
-- change. A sync whose cursor lies before it carries `keys`; revocation lists' serial is at least it.
CREATE TABLE ticket_key_set_changes (
  tenant_id uuid PRIMARY KEY REFERENCES tenants (id),
  change_seq bigint NOT NULL,
  changed_at bigint NOT NULL
);

-- docs/api-reference.md 4.1: deleting a lock leaves the clients bound to it able to sync only, and only up to the change
-- that deleted it, so a lock re-created with the same id is never seen by the old lock's client.
ALTER TABLE oauth_clients ADD COLUMN decommissioned_seq bigint;
