-- A rotated client secret is announced like a revocation: every instance drops the client from its cache of
-- authenticated clients, so the old secret stops working everywhere within the revocation poll (contract 3.4's 5 s).
ALTER TABLE token_revocations DROP CONSTRAINT token_revocations_kind_check;
ALTER TABLE token_revocations
  ADD CONSTRAINT token_revocations_kind_check CHECK (kind IN ('client', 'user', 'family', 'jti', 'client-secret'));
