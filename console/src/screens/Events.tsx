// Events and webhooks: the tenant's recent events, its webhook subscriptions, a subscription's delivery log, replay.
import { useState } from 'react';
import { formatTime, operator } from '../api.ts';
import { Status, Table, must, useLoad } from '../ui.tsx';

function Deliveries({ id }: { id: string }) {
  const [message, setMessage] = useState<string | null>(null);
  const [actionError, setActionError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const log = useLoad(async () => must(await operator.GET('/operatorapi/webhooks/{id}/deliveries', { params: { path: { id }, query: { limit: 100 } } })), [id]);

  async function replay(eventIds?: string[]) {
    setBusy(true);
    setActionError(null);
    try {
      const answer = must(
        await operator.POST('/operatorapi/webhooks/{id}/replay', {
          params: { path: { id } },
          body: eventIds ? { eventIds } : { since: Date.now() - 24 * 3600 * 1000 },
        }),
      );
      setMessage(`${answer.replayed} events queued for delivery again.`);
      await log.reload();
    } catch (caught) {
      setActionError(caught instanceof Error ? caught.message : String(caught));
    } finally {
      setBusy(false);
    }
  }

  return (
    <section aria-labelledby="deliveries-heading">
      <h2 id="deliveries-heading">Deliveries of webhook {id}</h2>
      <button type="button" disabled={busy} onClick={() => void replay()}>
        Replay the last 24 hours
      </button>
      <Status busy={log.busy || busy} error={actionError ?? log.error} message={message} />
      <Table
        caption={`Delivery attempts of webhook ${id}`}
        headers={['Event', 'Time', 'Status', 'Error', 'Duration', 'Next attempt', 'Action']}
        empty="No delivery attempt yet."
        rows={(log.data ?? []).map((attempt) => [
          attempt.eventId,
          formatTime(attempt.time),
          attempt.statusCode === undefined ? '—' : String(attempt.statusCode),
          attempt.error ?? '',
          `${attempt.durationMs} ms`,
          formatTime(attempt.nextAttemptTime),
          <button key={attempt.eventId + attempt.time} type="button" disabled={busy} onClick={() => void replay([attempt.eventId])}>
            Replay event {attempt.eventId}
          </button>,
        ])}
      />
    </section>
  );
}

export function EventsScreen() {
  const [selected, setSelected] = useState<string | null>(null);
  const hooks = useLoad(async () => must(await operator.GET('/operatorapi/webhooks', { params: { query: { limit: 100 } } })), []);
  const events = useLoad(async () => must(await operator.GET('/operatorapi/events', { params: { query: { limit: 100 } } })), []);
  return (
    <>
      <h1>Events and webhooks</h1>
      <h2>Webhook subscriptions</h2>
      <Status busy={hooks.busy} error={hooks.error} />
      <Table
        caption="Webhook subscriptions"
        headers={['Webhook', 'URL', 'Events', 'Enabled', 'Deliveries']}
        empty="No webhook subscription."
        rows={(hooks.data ?? []).map((hook) => [
          hook.id,
          <code key="url" className="break">
            {hook.url}
          </code>,
          hook.eventTypes.join(', '),
          hook.enabled ? 'Yes' : `No${hook.disabledReason ? ` (${hook.disabledReason})` : ''}`,
          <button key={hook.id} type="button" aria-pressed={selected === hook.id} onClick={() => setSelected(hook.id)}>
            Show deliveries of {hook.id}
          </button>,
        ])}
      />
      {selected ? <Deliveries key={selected} id={selected} /> : null}
      <h2>Recent events</h2>
      <Status busy={events.busy} error={events.error} />
      <Table
        caption="Recent events"
        headers={['Sequence', 'Type', 'Time', 'Data']}
        empty="No event yet."
        rows={(events.data ?? []).map((event) => [
          String(event.sequence),
          event.type,
          formatTime(event.time),
          <code key="data" className="break">
            {JSON.stringify(event.data)}
          </code>,
        ])}
      />
    </>
  );
}
