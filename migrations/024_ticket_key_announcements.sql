-- docs/api-reference.md 8.6: explain answers as the lock would, and a lock refuses a credential signed with a key it
-- has not learnt. A ticket key reaches a lock with the change that announced it (sync, revocation list, trust answer):
-- the change-log position of that change, per key, tells whether a lock that applied position P knows the key.
ALTER TABLE signing_keys ADD COLUMN announced_seq bigint;
COMMENT ON COLUMN signing_keys.announced_seq IS 'A ticket key: the tenant change-log position of the key-set change that announced it; 0 for keys announced before positions were kept. NULL for access-token keys.';

-- A key made by the tenant's last recorded key-set change has that change's position (the key and the change share
-- their instant, docs/api-reference.md 8.1); every earlier key was announced before it, at a position no lock is told
-- of any more, so 0: every lock that applied anything is judged to know it, as before.
UPDATE signing_keys k
   SET announced_seq = COALESCE(
         (SELECT c.change_seq FROM ticket_key_set_changes c WHERE c.tenant_id = k.tenant_id AND c.changed_at = k.created_at),
         0)
 WHERE k.tenant_id IS NOT NULL;
