// Doors: search the tenant's locks; for one, who can open it now and why, and its health.
import { useState, type FormEvent } from 'react';
import { formatTime, nextCursor, operator, type Schemas } from '../api.ts';
import type { ScreenProps } from '../App.tsx';
import { Field, Status, Table, must, useLoad } from '../ui.tsx';

async function allDoors(): Promise<Schemas['SecuredObject'][]> {
  const doors: Schemas['SecuredObject'][] = [];
  let cursor: string | undefined;
  do {
    const result = await operator.GET('/operatorapi/securedobjects', { params: { query: { limit: 1000, ...(cursor ? { cursor } : {}) } } });
    doors.push(...must(result));
    cursor = nextCursor(result.response);
  } while (cursor && doors.length < 10_000);
  return doors;
}

function scheduleText(entry: Schemas['DoorAccess']): string {
  if (!entry.schedule) return 'Always within the dates';
  const next = entry.nextWindow as { start?: number; end?: number } | undefined;
  return next?.end ? `Scheduled; this window ends ${formatTime(next.end)}` : 'Scheduled';
}

function DoorDetail({ id }: { id: string }) {
  const { data, busy, error, reload } = useLoad(async () => {
    const [detail, who] = await Promise.all([
      operator.GET('/operatorapi/securedobjects/{id}', { params: { path: { id } } }).then(must),
      operator.GET('/operatorapi/securedobjects/{id}/access', { params: { path: { id }, query: { limit: 1000 } } }).then(must),
    ]);
    return { detail, who };
  }, [id]);
  return (
    <section aria-labelledby="door-heading">
      <h2 id="door-heading">Door {id}</h2>
      <button type="button" onClick={() => void reload()}>
        Refresh
      </button>
      <Status busy={busy} error={error} message={data ? `Door ${id}: ${data.who.length} can open it now.` : null} />
      {data ? (
        <>
          <h3>Health</h3>
          <dl className="facts">
            <dt>Last seen</dt>
            <dd>{data.detail.lastSeenTime ? formatTime(data.detail.lastSeenTime) : 'Never'}</dd>
            <dt>Applied serial</dt>
            <dd>{data.detail.appliedThrough ?? 'None yet'}</dd>
            <dt>Pending revocations</dt>
            <dd>{data.detail.pendingRevocations}</dd>
            <dt>Clock</dt>
            <dd>{data.detail.clockDrift ? `Drifting (${data.detail.clockOffset ?? '?'} ms)` : 'In step'}</dd>
            <dt>Key registered</dt>
            <dd>{data.detail.keyThumbprint ? 'Yes' : 'No'}</dd>
            <dt>Time zone</dt>
            <dd>{data.detail.timeZone}</dd>
          </dl>
          <h3>Who can open it now</h3>
          <Table
            caption={`Phones that can open ${id} now`}
            headers={['Phone', 'Resident', 'Why', 'Valid', 'Schedule', 'Key bound']}
            empty="Nobody can open this door now."
            rows={data.who.map((entry) => [
              entry.mobileDeviceId,
              entry.residentName ?? entry.residentId ?? '—',
              entry.accessPermissionId ? `Access permission ${entry.accessPermissionId}` : `Ticket ${entry.tokenId}${entry.override ? ' (override)' : ''}`,
              `${formatTime(entry.beginDate)} – ${formatTime(entry.endDate)}`,
              scheduleText(entry),
              entry.keyBound ? 'Yes' : 'No',
            ])}
          />
        </>
      ) : null}
    </section>
  );
}

export function DoorsScreen({ navigate, search }: ScreenProps) {
  const [query, setQuery] = useState(search.get('q') ?? '');
  const selected = search.get('door');
  const { data, busy, error } = useLoad(allDoors, []);
  const shown = (data ?? []).filter((door) => door.id.toLowerCase().includes(query.trim().toLowerCase()));
  const submit = (event: FormEvent) => {
    event.preventDefault();
    navigate(`/console/doors?q=${encodeURIComponent(query)}`);
  };
  return (
    <>
      <h1>Doors</h1>
      <form role="search" onSubmit={submit} aria-label="Search doors">
        <Field label="Door id contains">
          <input type="search" name="q" value={query} onChange={(event) => setQuery(event.target.value)} />
        </Field>
      </form>
      <Status busy={busy} error={error} message={data ? `${shown.length} of ${data.length} doors shown.` : null} />
      <Table
        caption="Doors"
        headers={['Door', 'Channels', 'Key registered', 'Details']}
        empty="No door matches."
        rows={shown.slice(0, 200).map((door) => [
          door.id,
          door.channels.join(', '),
          door.keyThumbprint ? 'Yes' : 'No',
          <a
            key={door.id}
            href={`/console/doors?door=${encodeURIComponent(door.id)}`}
            onClick={(event) => {
              event.preventDefault();
              navigate(`/console/doors?door=${encodeURIComponent(door.id)}&q=${encodeURIComponent(query)}`);
            }}
          >
            Who can open {door.id}
          </a>,
        ])}
      />
      {selected ? <DoorDetail id={selected} /> : null}
    </>
  );
}
