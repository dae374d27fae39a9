-- The writes of a grant and of a membership change in statements that a Citus cluster runs on the tenant's node alone,
-- in one transaction committed there in one phase (docs/scaling.md, "Running on Citus"). Before, each was one statement
-- with INSERTs in its CTEs (the tickets, the audit counter, the events); Citus ran such a statement in steps, copied
-- each step's result to every worker and committed on all of them in two phases, so a device joining a resident opened
-- a transaction on every node of the cluster. Migration 035 did the same for the ticket create. These functions are
-- called inside the services' transactions, where Citus runs a function on the coordinator and plans each of its
-- statements on its own; the rules that keep each on the tenant's node:
-- * no statement writes in a CTE: each write is a statement of its own, its inputs in variables;
-- * each INSERT … SELECT reads a row of the tenant for the rows' tenant_id (the permission, the audit counter), so Citus
--   runs it on the shard that holds that row; with the tenant as a constant it pulls the rows through the coordinator
--   and copies them to the shard, and a copy commits in two phases;
-- * no volatile function in an INSERT … SELECT (Citus then pulls its rows through the coordinator): ids are drawn
--   first, into variables;
-- * audit_events loses its `id` column: a bigserial that nothing has read since migration 016 made (tenant_id, seq) the
--   key, and whose default, a sequence, is such a function.
-- On PostgreSQL each call is one round trip, as the statement it replaces was.

ALTER TABLE audit_events DROP COLUMN id;

-- The events of one change, appended to the tenant's audit trail numbered with its next sequence numbers (migration
-- 008), in the order given; nothing (and no lock) when there are none. LOCK ORDER (src/db/repositories/audit.repo.ts):
-- the counter row is locked until commit, so a caller takes it last, after every other row lock of its transaction.
CREATE FUNCTION append_audit_events(
  p_tenant_id uuid, p_times bigint[], p_actors text[], p_actions text[], p_targets text[], p_request_ids text[], p_data jsonb[]
) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_count int := coalesce(cardinality(p_times), 0);
  v_last bigint;
  v_event_ids uuid[];
BEGIN
  IF v_count = 0 THEN
    RETURN;
  END IF;
  INSERT INTO tenant_audit_counters AS c (tenant_id, last_seq) VALUES (p_tenant_id, v_count)
  ON CONFLICT (tenant_id) DO UPDATE SET last_seq = c.last_seq + EXCLUDED.last_seq
  RETURNING c.last_seq INTO v_last;
  -- The event ids are drawn first, not by the column's default nor in the INSERT: Citus runs no INSERT … SELECT on the
  -- shards that calls a volatile function, and pulls its rows through the coordinator instead.
  v_event_ids := ARRAY(SELECT gen_random_uuid() FROM generate_series(1, v_count));
  INSERT INTO audit_events (tenant_id, seq, event_id, time, actor, action, target, request_id, data)
  SELECT c.tenant_id, v_last - v_count + e.ordinal, e.event_id, e.time, e.actor, e.action, e.target, e.request_id,
         coalesce(e.data, '{}')
    FROM tenant_audit_counters c
   CROSS JOIN unnest(v_event_ids, p_times, p_actors, p_actions, p_targets, p_request_ids, p_data) WITH ORDINALITY
         AS e (event_id, time, actor, action, target, request_id, data, ordinal)
   WHERE c.tenant_id = p_tenant_id;
END;
$$;

-- Tickets of access permissions, one per element of the four arrays (the same length): the ticket's id, its
-- permission, lock and device; each gets its permission's dates, commands, channels and schedule as stored
-- (docs/api-reference.md 9) and the change number p_seq. The caller holds the tenant's change counter, as every writer
-- of a permission's tickets does, so no other transaction adds a live ticket for the same pair meanwhile; a pair that
-- has one anyway fails the insert on tickets_permission_pair_idx (migration 016) rather than being skipped, since the
-- events would then name a ticket that does not exist. Planned for each call's arrays (force_custom_plan): a generic
-- plan would assume ten elements where a grant has a hundred thousand.
CREATE FUNCTION insert_permission_tickets(
  p_tenant_id uuid, p_ids uuid[], p_permission_ids uuid[], p_lock_ids text[], p_device_ids text[], p_now bigint, p_seq bigint
) RETURNS void
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_custom_plan AS $$
BEGIN
  INSERT INTO tickets (id, tenant_id, secured_object_id, mobile_device_id, begin_date, end_date, created_at, commands,
                       channels, access_permission_id, schedule, change_seq)
  SELECT x.id, p.tenant_id, x.lock_id, x.device_id, p.begin_date, p.end_date, p_now, p.commands, p.channels, p.id,
         p.schedule, p_seq
    FROM unnest(p_ids, p_permission_ids, p_lock_ids, p_device_ids) AS x (id, permission_id, lock_id, device_id)
    JOIN access_permissions p ON p.tenant_id = p_tenant_id AND p.id = x.permission_id;
END;
$$;

-- The `ticket.created` events of permission tickets (docs/api-reference.md 10), one per element of p_targets and
-- p_data, in their order, all at p_now by p_actor in the request p_request_id; append_audit_events appends them.
CREATE FUNCTION append_ticket_created_events(
  p_tenant_id uuid, p_now bigint, p_actor text, p_request_id text, p_targets text[], p_data jsonb[]
) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_count int := coalesce(cardinality(p_targets), 0);
BEGIN
  PERFORM append_audit_events(p_tenant_id, array_fill(p_now, ARRAY[v_count]), array_fill(p_actor, ARRAY[v_count]),
                              array_fill('ticket.created'::text, ARRAY[v_count]), p_targets,
                              array_fill(p_request_id, ARRAY[v_count]), p_data);
END;
$$;

-- docs/service-overview.md section 1: for each of the permissions p_permission_ids (one, or a bulk job's batch), one
-- ticket per (device of its resident) × (lock of its lock group), and their `ticket.created` events: per permission,
-- in the order of p_permission_ids, one per 1,000 tickets (docs/api-reference.md 10). Takes the event counter, so it is
-- called last in its transaction but for further events. Answers how many tickets each permission got (none: no row).
CREATE FUNCTION expand_access_permissions(
  p_tenant_id uuid, p_permission_ids uuid[], p_now bigint, p_seq bigint, p_actor text, p_request_id text
) RETURNS TABLE (access_permission_id uuid, issued int)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_custom_plan AS $$
DECLARE
  v_ids uuid[];
  v_permissions uuid[];
  v_locks text[];
  v_devices text[];
  v_targets text[];
  v_data jsonb[];
BEGIN
  SELECT array_agg(gen_random_uuid()), array_agg(p.id), array_agg(lgo.secured_object_id), array_agg(rd.mobile_device_id)
    INTO v_ids, v_permissions, v_locks, v_devices
    FROM access_permissions p
    JOIN resident_devices rd ON rd.tenant_id = p_tenant_id AND rd.resident_id = p.resident_id
    JOIN lock_group_objects lgo ON lgo.tenant_id = p_tenant_id AND lgo.lock_group_id = p.lock_group_id
   WHERE p.tenant_id = p_tenant_id AND p.id = ANY (p_permission_ids);
  IF v_ids IS NULL THEN
    RETURN;
  END IF;
  PERFORM insert_permission_tickets(p_tenant_id, v_ids, v_permissions, v_locks, v_devices, p_now, p_seq);

  SELECT array_agg('access_permission:' || e.key ORDER BY e.ordinal, e.chunk),
         array_agg(jsonb_build_object('accessPermissionId', e.key::text, 'ticketIds', e.ids) ORDER BY e.ordinal, e.chunk)
    INTO v_targets, v_data
    FROM (SELECT k.ordinal, t.key, t.chunk, jsonb_agg(t.id) AS ids
            FROM (SELECT x.id, x.key, (row_number() OVER (PARTITION BY x.key) - 1) / 1000 AS chunk
                    FROM unnest(v_ids, v_permissions) AS x (id, key)) t
            JOIN unnest(p_permission_ids) WITH ORDINALITY AS k (key, ordinal) ON k.key = t.key
           GROUP BY k.ordinal, t.key, t.chunk) e;
  PERFORM append_ticket_created_events(p_tenant_id, p_now, p_actor, p_request_id, v_targets, v_data);

  RETURN QUERY SELECT x.key, count(*)::int FROM unnest(v_permissions) AS x (key) GROUP BY x.key;
END;
$$;

-- Membership stays true (docs/api-reference.md 5): the new members p_member_ids of a group get the tickets of every
-- permission reaching it: new devices of the resident p_group_id (p_resident true) for every lock of its permissions'
-- lock groups, or new locks of the lock group p_group_id for every device of its permissions' residents. Their
-- `ticket.created` events, in chunks of 1,000, have the target p_target and p_data with the chunk's `ticketIds`. Takes
-- the event counter (call it last). Answers how many tickets were issued.
CREATE FUNCTION issue_member_tickets(
  p_tenant_id uuid, p_resident boolean, p_group_id uuid, p_member_ids text[], p_now bigint, p_seq bigint,
  p_actor text, p_request_id text, p_target text, p_data jsonb
) RETURNS int
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_custom_plan AS $$
DECLARE
  v_ids uuid[];
  v_permissions uuid[];
  v_locks text[];
  v_devices text[];
  v_count int;
  v_chunks int;
BEGIN
  IF p_resident THEN
    SELECT array_agg(gen_random_uuid()), array_agg(p.id), array_agg(lgo.secured_object_id), array_agg(m.id)
      INTO v_ids, v_permissions, v_locks, v_devices
      FROM access_permissions p
      JOIN lock_group_objects lgo ON lgo.tenant_id = p_tenant_id AND lgo.lock_group_id = p.lock_group_id
     CROSS JOIN unnest(p_member_ids) AS m (id)
     WHERE p.tenant_id = p_tenant_id AND p.resident_id = p_group_id;
  ELSE
    SELECT array_agg(gen_random_uuid()), array_agg(p.id), array_agg(m.id), array_agg(rd.mobile_device_id)
      INTO v_ids, v_permissions, v_locks, v_devices
      FROM access_permissions p
      JOIN resident_devices rd ON rd.tenant_id = p_tenant_id AND rd.resident_id = p.resident_id
     CROSS JOIN unnest(p_member_ids) AS m (id)
     WHERE p.tenant_id = p_tenant_id AND p.lock_group_id = p_group_id;
  END IF;
  v_count := coalesce(cardinality(v_ids), 0);
  IF v_count = 0 THEN
    RETURN 0;
  END IF;
  PERFORM insert_permission_tickets(p_tenant_id, v_ids, v_permissions, v_locks, v_devices, p_now, p_seq);

  v_chunks := (v_count + 999) / 1000;
  PERFORM append_ticket_created_events(
    p_tenant_id, p_now, p_actor, p_request_id, array_fill(p_target, ARRAY[v_chunks]),
    ARRAY(SELECT p_data || jsonb_build_object('ticketIds', to_jsonb(v_ids[c * 1000 + 1 : c * 1000 + 1000]))
            FROM generate_series(0, v_chunks - 1) AS c ORDER BY c));
  RETURN v_count;
END;
$$;
