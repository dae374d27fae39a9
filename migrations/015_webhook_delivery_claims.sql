-- A delivery's claims are fenced by a number that never goes back (docs/api-reference.md 10, migration 013).
-- `attempts` places a delivery in the retry schedule, and a replay resets it to 0, so after a replay a new claim can
-- carry the same `attempts` as one still in flight from before it; comparing `attempts` alone then recorded the
-- superseded claim's outcome as the replayed attempt's. `claims` counts every claim and is never reset: a worker
-- records its outcome only while `claims` still equals the value its claim set.
ALTER TABLE webhook_deliveries ADD COLUMN claims bigint NOT NULL DEFAULT 0;
UPDATE webhook_deliveries SET claims = attempts;
