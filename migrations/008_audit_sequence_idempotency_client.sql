-- Idempotency-Key records per client (contract 4.3) and a per-tenant audit sequence (contract 7.5).

-- A key names one client's request: per tenant, one client could claim another client's key, or be answered the
-- other client's stored response. The records made so far do not say which client sent them; they are a 24 h cache
-- of retries, so they are dropped rather than guessed at (a retry that spans this upgrade runs again).
DELETE FROM idempotency_keys;
ALTER TABLE idempotency_keys ADD COLUMN client_id text NOT NULL;
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey;
ALTER TABLE idempotency_keys ADD PRIMARY KEY (tenant_id, client_id, key);
