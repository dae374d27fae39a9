-- The holder-binding policy reaches locks (docs/api-reference.md 11.2): a change of the tenant's policy or of a lock's
-- override takes a number from the tenant's change counter, like a ticket or key-set change, so that sync cursors
-- and revocation-list serials move past it and a lock that is never online applies the list that carries the change.
ALTER TABLE tenants ADD COLUMN holder_binding_seq bigint NOT NULL DEFAULT 0;
ALTER TABLE secured_objects ADD COLUMN holder_binding_seq bigint NOT NULL DEFAULT 0;
