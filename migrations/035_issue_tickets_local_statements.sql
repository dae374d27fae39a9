-- issue_tickets (migration 034) with the same answer, in statements a Citus node runs on its own shards alone
-- (docs/scaling.md, "Ticket creates of one tenant are written in batches"). 034 wrote the tickets and their events in
-- one statement with INSERTs in its CTEs: Citus plans such a statement as steps whose results it copies to every other
-- node, then commits on each of them in two phases: a call of five tickets, delegated to the tenant's node, took
-- about 44 ms on a coordinator and two workers sharing one 2-core machine, and takes 9 ms written as below. Three
-- rules make every statement run on the tenant's node alone, and cost nothing on PostgreSQL:
-- * no statement writes in a CTE: the created tickets come back by RETURN QUERY … RETURNING;
-- * the tickets' tenant_id is the locked lock's (so.tenant_id), so Citus sees the INSERT … SELECT keep its rows in the
--   co-located shard and runs it there, where a constant would make it pull the rows through itself first;
-- * the events' INSERT … SELECT reads only the batch, no table: audit_events takes its id from a sequence, and Citus
--   runs no INSERT … SELECT over a distributed table that needs one on the shards.
-- The steps and their LOCK ORDER are 034's: the change number, the named locks, the named devices (each set in id
-- order, FOR SHARE), then the tickets, then the audit counter last. Which tickets are created is read once, after
-- the locks are held, into v_ordinals (their ordinals) and v_ids, so the insert, the events and the answer agree.
--
-- The answer: one row per ticket with its ordinal; a created ticket has created = true and its columns as stored
-- (lock_channels and device_exists are not read for it: NULL and true); one not created has created = false, the
-- lock's channels (NULL: no such lock) and whether the device exists. Rows come in no particular order.
CREATE OR REPLACE FUNCTION issue_tickets(p_tenant_id uuid, p_batch jsonb)
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
  v_ordinals int[];
  v_ids uuid[];
  v_created int;
  v_audit_last bigint;
BEGIN
  -- nextChangeSeq's upsert (src/db/repositories/change-log.repo.ts), as in 034.
  INSERT INTO tenant_change_counters AS c (tenant_id, last_seq) VALUES (p_tenant_id, 1)
  ON CONFLICT (tenant_id) DO UPDATE SET last_seq = c.last_seq + 1
  RETURNING c.last_seq INTO v_seq;

  PERFORM FROM secured_objects so
    WHERE so.tenant_id = p_tenant_id AND so.id IN (SELECT b ->> 'secured_object_id' FROM jsonb_array_elements(p_batch) AS b)
    ORDER BY so.id FOR SHARE;
  PERFORM FROM mobile_devices md
    WHERE md.tenant_id = p_tenant_id AND md.id IN (SELECT b ->> 'mobile_device_id' FROM jsonb_array_elements(p_batch) AS b)
    ORDER BY md.id FOR SHARE;

  -- The tickets this call creates: those whose lock and device exist and whose lock supports every channel.
  SELECT array_agg(i.ordinal ORDER BY i.ordinal), array_agg(i.id ORDER BY i.ordinal) INTO v_ordinals, v_ids
    FROM jsonb_to_recordset(p_batch) AS i (ordinal int, id uuid, secured_object_id text, mobile_device_id text, channels text[])
    JOIN secured_objects so ON so.tenant_id = p_tenant_id AND so.id = i.secured_object_id
    JOIN mobile_devices md ON md.tenant_id = so.tenant_id AND md.id = i.mobile_device_id
   WHERE so.channels @> i.channels;
  v_created := coalesce(cardinality(v_ids), 0);

  IF v_created > 0 THEN
    RETURN QUERY
    INSERT INTO tickets AS t (id, tenant_id, secured_object_id, mobile_device_id, begin_date, end_date, created_at,
                              commands, channels, schedule, override, change_seq)
    SELECT i.id, so.tenant_id, i.secured_object_id, i.mobile_device_id, i.begin_date, i.end_date, i.created_at, i.commands,
           i.channels, i.schedule, i.override, v_seq
      FROM jsonb_to_recordset(p_batch) AS i (ordinal int, id uuid, secured_object_id text, mobile_device_id text,
             begin_date bigint, end_date bigint, created_at bigint, commands text[], channels text[], schedule jsonb,
             override boolean)
      JOIN secured_objects so ON so.tenant_id = p_tenant_id AND so.id = i.secured_object_id
     WHERE i.ordinal = ANY (v_ordinals)
    RETURNING v_seq, v_ordinals[array_position(v_ids, t.id)], true, NULL::text[], true,
              t.id, t.tenant_id, t.secured_object_id, t.mobile_device_id, t.begin_date, t.end_date, t.created_at,
              t.commands, t.channels, t.revoked_at, t.downloaded_at, t.access_permission_id, t.revocation_applied_at,
              t.schedule, t.override;

    INSERT INTO tenant_audit_counters AS c (tenant_id, last_seq) VALUES (p_tenant_id, v_created)
    ON CONFLICT (tenant_id) DO UPDATE SET last_seq = c.last_seq + EXCLUDED.last_seq
    RETURNING c.last_seq INTO v_audit_last;

    INSERT INTO audit_events (tenant_id, seq, time, actor, action, target, request_id, data)
    SELECT p_tenant_id, v_audit_last - v_created + array_position(v_ordinals, i.ordinal),
           i.created_at, i.actor, 'ticket.created', 'ticket:' || i.id, i.request_id,
           jsonb_build_object('ticketIds', jsonb_build_array(i.id), 'securedObjectId', i.secured_object_id,
                              'mobileDeviceId', i.mobile_device_id)
      FROM jsonb_to_recordset(p_batch) AS i (ordinal int, id uuid, secured_object_id text, mobile_device_id text,
             created_at bigint, actor text, request_id text)
     WHERE i.ordinal = ANY (v_ordinals)
     ORDER BY i.ordinal;
  END IF;

  IF v_created < jsonb_array_length(p_batch) THEN
    RETURN QUERY
    SELECT v_seq, i.ordinal, false, so.channels, md.id IS NOT NULL,
           NULL::uuid, NULL::uuid, NULL::text, NULL::text, NULL::bigint, NULL::bigint, NULL::bigint, NULL::text[],
           NULL::text[], NULL::bigint, NULL::bigint, NULL::uuid, NULL::bigint, NULL::jsonb, NULL::boolean
      FROM jsonb_to_recordset(p_batch) AS i (ordinal int, secured_object_id text, mobile_device_id text)
      LEFT JOIN secured_objects so ON so.tenant_id = p_tenant_id AND so.id = i.secured_object_id
      LEFT JOIN mobile_devices md ON md.tenant_id = p_tenant_id AND md.id = i.mobile_device_id
     WHERE NOT (i.ordinal = ANY (coalesce(v_ordinals, '{}')));
  END IF;
END;
$$;
