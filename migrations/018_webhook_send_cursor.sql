-- Fresh events are sent straight from the event log after each subscription's cursor (docs/api-reference.md 10).
--
-- Until now every event became a `webhook_deliveries` row per subscription (migration 013), which was then claimed,
-- settled and logged: about four row writes per event, competing with the changes that write the events. Now a
-- subscription's `dispatched_through` is its send cursor: every event of its types after it, up to the tenant's
-- committed `last_seq`, is still to be sent. A worker takes a subscription, not an event: one statement leases up to a
-- few subscriptions with events past their cursor (FOR NO KEY UPDATE SKIP LOCKED, so instances take different ones),
-- sets `sending_until` (the lease, longer than a batch of attempts takes) and bumps `sending_claim`, and reads a batch
-- of the subscription's events after the cursor. Once the batch is sent, one transaction moves the cursor past it and
-- releases the lease, only while `sending_claim` is still the worker's (a worker whose lease ran out, and whose range
-- another worker took, records no outcome); in it each event that failed becomes a `webhook_deliveries` row in retry
-- state (its first attempt counted), which the claim-and-settle path of migrations 013 and 015 retries, as it does
-- replays. So delivery rows exist only for retries and replays.
--
-- At least once, across crashes: the cursor moves only in the transaction that records the batch, with its failures,
-- so a worker that dies between sending and recording leaves the cursor where it was, and after the lease another
-- worker sends the same events again under the same webhook-id (the event id). A committed event is never skipped: the
-- batch reads up to the tenant's `last_seq` of its own snapshot, and a tenant's events commit in sequence order
-- (migration 008), so every event up to it is visible. `dispatched_through` keeps its meaning for creation, PATCH and
-- retention (a subscription receives the events after it; a paused one resumes from it).
-- Recording a batch sets `sending_until` to the time it released the lease, and claims take the subscriptions with the
-- lowest `sending_until` first (never served first): one busy subscription never keeps the others waiting.
ALTER TABLE webhooks ADD COLUMN sending_until bigint;
ALTER TABLE webhooks ADD COLUMN sending_claim bigint NOT NULL DEFAULT 0;

-- Delivery rows are no longer made for fresh events: what the dispatcher made and is still pending stays pending and
-- is sent by the retry path as before.
