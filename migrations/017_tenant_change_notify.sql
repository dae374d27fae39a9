-- docs/lock-sync.md: every advance of a tenant's change counter (tenant_change_counters, 005) is announced on the
-- channel `tenant_changes`, so each instance knows every tenant's latest change number without asking and can answer
-- an online lock's "nothing new" sync from memory. A trigger is the one place every writer passes through (the
-- services, the CLI, single-statement ticket creation); NOTIFY is transactional, so a rolled-back change announces
-- nothing and a committed one is announced at its commit. Payload: `<last_seq>:<tenant_id>`.
CREATE FUNCTION announce_tenant_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('tenant_changes', NEW.last_seq::text || ':' || NEW.tenant_id::text);
  RETURN NULL;
END;
$$;

CREATE TRIGGER tenant_change_counters_announce
  AFTER INSERT OR UPDATE ON tenant_change_counters
  FOR EACH ROW EXECUTE FUNCTION announce_tenant_change();
