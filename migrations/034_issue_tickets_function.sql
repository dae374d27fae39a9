-- docs/scaling.md, "Ticket creates of one tenant are written in batches": one batch of a tenant's ticket creates
-- (src/services/batching.ts) in one call, so one round trip and one commit instead of BEGIN, two statements and COMMIT.
-- The steps and their LOCK ORDER are those of every writer of a tenant's tickets (src/db/repositories/ticket.repo.ts,
-- services/removal.ts): the tenant's change number first, then the named locks' rows and the named devices' rows, each
-- set in id order and FOR SHARE, then the insert with one `ticket.created` audit event per ticket, whose counter is
-- taken last (audit.repo.ts). In READ COMMITTED each statement of a volatile function reads what committed before it
-- started, so the insert sees a removal that the change number waited for. Every statement names its tenant, so on a
-- cluster distributed by tenant_id each is routed to the tenant's node (docs/scaling.md).
--
-- p_batch: a JSON array of tickets with the keys of the recordset below; the rows it locks are those the batch names,
-- so no caller can have a ticket inserted for a row it did not lock. Answers one row per ticket, with its `ordinal`:
-- the change number, whether it was created, the lock's channels (NULL: no such lock) and whether the device exists,
-- and the created ticket's columns (NULL where it was not created).
CREATE FUNCTION issue_tickets(p_tenant_id uuid, p_batch jsonb)
RETURNS TABLE (
  batch_change_seq bigint, ordinal int, created boolean, lock_channels text[], device_exists boolean,
  id uuid, tenant_id uuid, secured_object_id text, mobile_device_id text, begin_date bigint, end_date bigint,
  created_at bigint, commands text[], channels text[], revoked_at bigint, downloaded_at bigint,
  access_permission_id uuid, revocation_applied_at bigint, schedule jsonb, override boolean
)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
  v_seq bigint;
BEGIN
  -- nextChangeSeq's upsert (src/db/repositories/change-log.repo.ts): a statement of its own here, as there, so a cluster
  -- runs it whole; a transaction making the tenant's first counter at once is waited for.
  INSERT INTO tenant_change_counters AS c (tenant_id, last_seq) VALUES (p_tenant_id, 1)
  ON CONFLICT (tenant_id) DO UPDATE SET last_seq = c.last_seq + 1
  RETURNING c.last_seq INTO v_seq;

  PERFORM FROM secured_objects so
    WHERE so.tenant_id = p_tenant_id AND so.id IN (SELECT b ->> 'secured_object_id' FROM jsonb_array_elements(p_batch) AS b)
    ORDER BY so.id FOR SHARE;
  PERFORM FROM mobile_devices md
    WHERE md.tenant_id = p_tenant_id AND md.id IN (SELECT b ->> 'mobile_device_id' FROM jsonb_array_elements(p_batch) AS b)
    ORDER BY md.id FOR SHARE;

  RETURN QUERY
  WITH input AS (
    SELECT * FROM jsonb_to_recordset(p_batch) AS i (ordinal int, id uuid, secured_object_id text, mobile_device_id text,
      begin_date bigint, end_date bigint, created_at bigint, commands text[], channels text[], schedule jsonb,
      override boolean, actor text, request_id text)
  ), inserted AS (
    INSERT INTO tickets AS t (id, tenant_id, secured_object_id, mobile_device_id, begin_date, end_date, created_at,
                              commands, channels, schedule, override, change_seq)
    SELECT i.id, p_tenant_id, i.secured_object_id, i.mobile_device_id, i.begin_date, i.end_date, i.created_at, i.commands,
           i.channels, i.schedule, i.override, v_seq
      FROM input i
      JOIN secured_objects so ON so.tenant_id = p_tenant_id AND so.id = i.secured_object_id
      JOIN mobile_devices md ON md.tenant_id = p_tenant_id AND md.id = i.mobile_device_id
     WHERE so.channels @> i.channels
    RETURNING t.id, t.tenant_id, t.secured_object_id, t.mobile_device_id, t.begin_date, t.end_date, t.created_at,
              t.commands, t.channels, t.revoked_at, t.downloaded_at, t.access_permission_id, t.revocation_applied_at,
              t.schedule, t.override
  ), audit_input AS (
    SELECT row_number() OVER () AS n, s.*
      FROM (SELECT i.created_at AS time, i.actor, 'ticket.created' AS action, 'ticket:' || i.id AS target, i.request_id,
                   jsonb_build_object('ticketIds', jsonb_build_array(i.id), 'securedObjectId', i.secured_object_id,
                                      'mobileDeviceId', i.mobile_device_id) AS data
              FROM inserted JOIN input i ON i.id = inserted.id ORDER BY i.ordinal) AS s
  ), audit_seq AS (
    INSERT INTO tenant_audit_counters AS c (tenant_id, last_seq)
    SELECT p_tenant_id, count(*) FROM audit_input HAVING count(*) > 0
    ON CONFLICT (tenant_id) DO UPDATE SET last_seq = c.last_seq + EXCLUDED.last_seq
    RETURNING c.last_seq
  ), audited AS (
    INSERT INTO audit_events (tenant_id, seq, time, actor, action, target, request_id, data)
    SELECT p_tenant_id, audit_seq.last_seq - (SELECT count(*) FROM audit_input) + a.n,
           a.time, a.actor, a.action, a.target, a.request_id, a.data
      FROM audit_input a, audit_seq
  )
  SELECT v_seq, i.ordinal, inserted.id IS NOT NULL, so.channels, md.id IS NOT NULL,
         inserted.id, inserted.tenant_id, inserted.secured_object_id, inserted.mobile_device_id, inserted.begin_date,
         inserted.end_date, inserted.created_at, inserted.commands, inserted.channels, inserted.revoked_at,
         inserted.downloaded_at, inserted.access_permission_id, inserted.revocation_applied_at, inserted.schedule,
         inserted.override
    FROM input i
    LEFT JOIN inserted ON inserted.id = i.id
    LEFT JOIN secured_objects so ON so.tenant_id = p_tenant_id AND so.id = i.secured_object_id
    LEFT JOIN mobile_devices md ON md.tenant_id = p_tenant_id AND md.id = i.mobile_device_id
   ORDER BY i.ordinal;
END;
$$;
