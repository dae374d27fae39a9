-- docs/api-reference.md 4.1: a client whose lock was deleted may only sync. Its access tokens that carry any other scope
-- are refused on every instance within the revocation poll (docs/api-reference.md 3.4's 5 s), and every instance drops the client
-- from its cache of authenticated clients, so its next token is narrowed at once. One row per such client
-- (subject: the client id), announced like any revocation.
ALTER TABLE token_revocations DROP CONSTRAINT token_revocations_kind_check;
ALTER TABLE token_revocations
  ADD CONSTRAINT token_revocations_kind_check
  CHECK (kind IN ('client', 'user', 'family', 'jti', 'client-secret', 'client-decommissioned'));
