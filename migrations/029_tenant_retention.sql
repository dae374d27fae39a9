-- Retention per tenant (docs/api-reference.md 16.1): how many days a tenant keeps its access-log entries, its event
-- feed and its audit trail. NULL is the instance's default (ACCESS_LOG_RETENTION_DAYS, EVENT_RETENTION_DAYS,
-- AUDIT_RETENTION_DAYS), so a deployment's defaults still apply to every tenant that has not chosen.
ALTER TABLE tenants
  ADD COLUMN access_log_retention_days integer CHECK (access_log_retention_days BETWEEN 1 AND 3650),
  ADD COLUMN event_retention_days integer CHECK (event_retention_days BETWEEN 1 AND 3650),
  ADD COLUMN audit_retention_days integer CHECK (audit_retention_days BETWEEN 1 AND 3650);

-- The prunes now run a tenant at a time (services/retention.ts), each statement naming its tenant: their look-ups by
-- age start at the tenant. The same columns lead a time filter of the feed and the audit trail.
DROP INDEX webhook_attempts_time_idx;
CREATE INDEX webhook_attempts_time_idx ON webhook_attempts (tenant_id, time);
DROP INDEX audit_events_time_idx;
CREATE INDEX audit_events_time_idx ON audit_events (tenant_id, time);
