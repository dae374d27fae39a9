-- A lock's contact (its sync's acknowledgement, its access-log upload's word) and its access-log upload, in statements
-- that a Citus cluster runs on the tenant's node alone and commits there in one phase, as migration 036 did for a grant
-- and a membership change (docs/scaling.md, "Running on Citus"). Before, each was one statement with writes in its CTEs
-- (the telemetry row, the stamped revocations, the entries, the audit counter, the events): Citus ran it in steps,
-- copied each step's result to every worker and committed on all of them in two phases, so every lock's contact, which
-- online locks make every 30 s, opened a transaction on every node of the cluster. The rules of 036 hold here:
-- * no statement writes in a CTE; the rows a write returns are collected by a FOR loop over the write itself;
-- * each INSERT … SELECT reads the lock's row for the rows' tenant_id, so Citus runs it on the shard that holds it;
-- * no volatile function in an INSERT … SELECT.
-- On PostgreSQL each call is one round trip, as the statement it replaces was.

-- The events of one change, all at p_time by p_actor in the request p_request_id: one per element of p_actions,
-- p_targets and p_data, in their order. append_audit_events (036) appends them, and takes the event counter: call it last.
CREATE FUNCTION append_change_events(
  p_tenant_id uuid, p_time bigint, p_actor text, p_request_id text, p_actions text[], p_targets text[], p_data jsonb[]
) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_count int := coalesce(cardinality(p_actions), 0);
BEGIN
  PERFORM append_audit_events(p_tenant_id, array_fill(p_time, ARRAY[v_count]), array_fill(p_actor, ARRAY[v_count]),
                              p_actions, p_targets, array_fill(p_request_id, ARRAY[v_count]), p_data);
END;
$$;

-- 036's helper for `ticket.created` events, written again over append_change_events: one way to append the events of
-- one change. Same arguments, same events in the same order.
CREATE OR REPLACE FUNCTION append_ticket_created_events(
  p_tenant_id uuid, p_now bigint, p_actor text, p_request_id text, p_targets text[], p_data jsonb[]
) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM append_change_events(p_tenant_id, p_now, p_actor, p_request_id,
                               array_fill('ticket.created'::text, ARRAY[coalesce(cardinality(p_targets), 0)]), p_targets, p_data);
END;
$$;

-- What a lock's contact changed that the event log records (docs/api-reference.md 10), in their order: one
-- `ticket.revocation_applied` per 1,000 of the tickets p_stamped (in their order), then `secured_object.clock_drift`
-- when p_drift_offset_ms is not null (the contact first put the lock's clock beyond the limit).
CREATE FUNCTION lock_contact_events(p_secured_object_id text, p_stamped uuid[], p_drift_offset_ms bigint)
RETURNS TABLE (ordinal bigint, action text, target text, data jsonb)
LANGUAGE sql STABLE AS $$
  SELECT c.chunk, 'ticket.revocation_applied', 'secured_object:' || p_secured_object_id,
         jsonb_build_object('securedObjectId', p_secured_object_id, 'ticketIds', jsonb_agg(c.id ORDER BY c.n))
    FROM (SELECT x.id, x.n, (x.n - 1) / 1000 AS chunk FROM unnest(p_stamped) WITH ORDINALITY AS x (id, n)) c
   GROUP BY c.chunk
  UNION ALL
  SELECT (coalesce(cardinality(p_stamped), 0) + 999) / 1000, 'secured_object.clock_drift', 'secured_object:' || p_secured_object_id,
         jsonb_build_object('securedObjectId', p_secured_object_id, 'clockOffset', p_drift_offset_ms)
   WHERE p_drift_offset_ms IS NOT NULL
$$;

-- A contact with a lock (src/db/repositories/lock-telemetry.repo.ts, recordLockContact): `last_seen_at` and
-- `applied_through` only rise (p_acknowledged: the position the lock has applied everything up to, already capped at
-- the lock's own serial by the caller; null: nothing acknowledged), the clock offset is kept when given, and every
-- revocation of the lock's tickets at or below the applied position that had not reached it is stamped applied. Only
-- the tickets of the lock as registered now (made since its registration) are stamped: a lock registered again with a
-- deleted lock's id is another lock (docs/api-reference.md 4.1); while the id names no lock, every ticket of the id is.
-- With p_append its events are appended (lock_contact_events); without, they are answered (stamped_ids,
-- drift_offset_ms) for the caller to append with its own, after its other row locks. LOCK ORDER: the telemetry row,
-- the revoked ticket rows, then the event counter (only with p_append, and only when there are events).
CREATE FUNCTION record_lock_contact(
  p_tenant_id uuid, p_secured_object_id text, p_seen_at bigint, p_acknowledged bigint, p_clock_offset_ms bigint,
  p_drift_limit_ms bigint, p_append boolean, p_actor text, p_request_id text
) RETURNS TABLE (last_seen_at bigint, applied_through bigint, clock_offset_ms bigint, clock_checked_at bigint,
                 log_high bigint, stamped_ids uuid[], drift_offset_ms bigint)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
  v_previous_offset bigint;
  v_telemetry lock_telemetry%ROWTYPE;
  v_id uuid;
  v_stamped uuid[] := '{}';
  v_drift bigint;
  v_actions text[];
  v_targets text[];
  v_data jsonb[];
BEGIN
  -- The offset before this contact, read under the row lock the upsert takes anyway: a concurrent contact of the same
  -- lock commits first, so the first crossing of the drift limit is flagged once. (Two first contacts of a lock with
  -- no row yet both read none, and both may flag it.)
  SELECT t.clock_offset_ms INTO v_previous_offset
    FROM lock_telemetry t WHERE t.tenant_id = p_tenant_id AND t.secured_object_id = p_secured_object_id
     FOR UPDATE;
  INSERT INTO lock_telemetry AS t (tenant_id, secured_object_id, last_seen_at, applied_through, clock_offset_ms, clock_checked_at)
  VALUES (p_tenant_id, p_secured_object_id, p_seen_at, coalesce(p_acknowledged, 0), p_clock_offset_ms,
          CASE WHEN p_clock_offset_ms IS NOT NULL THEN p_seen_at END)
  ON CONFLICT (tenant_id, secured_object_id) DO UPDATE SET
         last_seen_at = greatest(t.last_seen_at, EXCLUDED.last_seen_at),
         applied_through = greatest(t.applied_through, EXCLUDED.applied_through),
         clock_offset_ms = coalesce(EXCLUDED.clock_offset_ms, t.clock_offset_ms),
         clock_checked_at = coalesce(EXCLUDED.clock_checked_at, t.clock_checked_at)
  RETURNING t.* INTO v_telemetry;

  -- An index range over the pending revocations only (tickets_pending_revocations_idx).
  FOR v_id IN
    UPDATE tickets t SET revocation_applied_at = p_seen_at
     WHERE t.tenant_id = p_tenant_id AND t.secured_object_id = p_secured_object_id
       AND t.revoked_at IS NOT NULL AND t.revocation_applied_at IS NULL AND t.credential_expires_at IS NOT NULL
       AND t.change_seq <= v_telemetry.applied_through
       AND t.created_at >= coalesce((SELECT so.created_at FROM secured_objects so
                                      WHERE so.tenant_id = p_tenant_id AND so.id = p_secured_object_id), 0)
    RETURNING t.id
  LOOP
    v_stamped := v_stamped || v_id;
  END LOOP;

  -- Flagged when this contact first puts the clock beyond the limit, not on every contact while it stays there.
  IF p_clock_offset_ms IS NOT NULL AND abs(v_telemetry.clock_offset_ms) > p_drift_limit_ms
     AND NOT coalesce(abs(v_previous_offset) > p_drift_limit_ms, false) THEN
    v_drift := v_telemetry.clock_offset_ms;
  END IF;

  IF p_append THEN
    SELECT array_agg(e.action ORDER BY e.ordinal), array_agg(e.target ORDER BY e.ordinal), array_agg(e.data ORDER BY e.ordinal)
      INTO v_actions, v_targets, v_data
      FROM lock_contact_events(p_secured_object_id, v_stamped, v_drift) e;
    PERFORM append_change_events(p_tenant_id, p_seen_at, p_actor, p_request_id, v_actions, v_targets, v_data);
  END IF;

  RETURN QUERY SELECT v_telemetry.last_seen_at, v_telemetry.applied_through, v_telemetry.clock_offset_ms,
                      v_telemetry.clock_checked_at, v_telemetry.log_high,
                      CASE WHEN p_append THEN '{}'::uuid[] ELSE v_stamped END,
                      CASE WHEN p_append THEN NULL ELSE v_drift END;
END;
$$;

-- Stores an upload's entries (src/db/repositories/access-log.repo.ts, insertAccessLogEntries), skipping every (lock,
-- registration, numbering, entryNo) already stored, and appends its events: the contact's deferred ones (p_stamped,
-- p_drift_offset_ms; lock_contact_events), then `access_log.granted` and `access_log.denied`, each naming up to 1,000
-- of the entries stored, by entryNo. An entry's phone is the device of the ticket its token id names when that is a
-- ticket of this lock (any other value, another tenant's credential or a malformed id, names none). Answers
-- registered false, storing and appending nothing, when the lock is gone; the caller holds the lock's row (FOR KEY
-- SHARE), so it cannot go between the two reads of it here. Takes the event counter: call it after every row lock.
-- Its statements keep the plan cache's default, unlike 036's: each entry costs index probes whatever the upload's size,
-- and planning each call for its own arrays (force_custom_plan) made an upload of 1,000 entries a third slower.
CREATE FUNCTION insert_access_log_entries(
  p_tenant_id uuid, p_secured_object_id text, p_entry_nos bigint[], p_lock_times bigint[], p_token_ids text[],
  p_commands text[], p_channels text[], p_results text[], p_reasons text[], p_received_at bigint, p_via text,
  p_clock_offset_ms bigint, p_numbering text, p_signed boolean, p_actor text, p_request_id text, p_stamped uuid[],
  p_drift_offset_ms bigint
) RETURNS TABLE (registered boolean, accepted int)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
  v_entry record;
  v_entry_nos bigint[] := '{}';
  v_results text[] := '{}';
  v_actions text[];
  v_targets text[];
  v_data jsonb[];
BEGIN
  PERFORM 1 FROM secured_objects so WHERE so.tenant_id = p_tenant_id AND so.id = p_secured_object_id;
  IF NOT FOUND THEN
    RETURN QUERY SELECT false, 0;
    RETURN;
  END IF;
  -- The registration is the lock's current created_at: a lock deleted and registered again with the same id counts
  -- from its own first entry.
  FOR v_entry IN
    INSERT INTO access_log_entries AS a (tenant_id, secured_object_id, lock_registered_at, entry_no, lock_time, token_id,
                                         mobile_device_id, command, channel, result, reason, received_at, via,
                                         clock_offset_ms, numbering, signed)
    SELECT so.tenant_id, so.id, so.created_at, e.entry_no, e.lock_time, e.token_id, t.mobile_device_id, e.command,
           e.channel, e.result, e.reason, p_received_at, p_via, p_clock_offset_ms, p_numbering, p_signed
      FROM secured_objects so
     CROSS JOIN unnest(p_entry_nos, p_lock_times, p_token_ids, p_commands, p_channels, p_results, p_reasons)
           AS e (entry_no, lock_time, token_id, command, channel, result, reason)
      LEFT JOIN tickets t
             ON t.tenant_id = p_tenant_id AND t.secured_object_id = p_secured_object_id
            AND t.id = CASE WHEN e.token_id ~ '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'
                            THEN e.token_id::uuid END
     WHERE so.tenant_id = p_tenant_id AND so.id = p_secured_object_id
    ON CONFLICT (tenant_id, secured_object_id, lock_registered_at, numbering, entry_no) DO NOTHING
    RETURNING a.entry_no, a.result
  LOOP
    v_entry_nos := v_entry_nos || v_entry.entry_no;
    v_results := v_results || v_entry.result;
  END LOOP;

  SELECT array_agg(e.action ORDER BY e.part, e.ordinal), array_agg(e.target ORDER BY e.part, e.ordinal),
         array_agg(e.data ORDER BY e.part, e.ordinal)
    INTO v_actions, v_targets, v_data
    FROM (SELECT 0 AS part, c.ordinal, c.action, c.target, c.data
            FROM lock_contact_events(p_secured_object_id, p_stamped, p_drift_offset_ms) c
          UNION ALL
          SELECT CASE WHEN r.result = 'granted' THEN 1 ELSE 2 END, r.chunk, 'access_log.' || r.result,
                 'secured_object:' || p_secured_object_id,
                 jsonb_build_object('securedObjectId', p_secured_object_id, 'via', p_via, 'signed', p_signed,
                                    'entryNos', jsonb_agg(r.entry_no ORDER BY r.entry_no))
            FROM (SELECT x.entry_no, x.result, (row_number() OVER (PARTITION BY x.result ORDER BY x.entry_no) - 1) / 1000 AS chunk
                    FROM unnest(v_entry_nos, v_results) AS x (entry_no, result)) r
           GROUP BY r.result, r.chunk) e;
  PERFORM append_change_events(p_tenant_id, p_received_at, p_actor, p_request_id, v_actions, v_targets, v_data);

  RETURN QUERY SELECT true, cardinality(v_entry_nos);
END;
$$;
