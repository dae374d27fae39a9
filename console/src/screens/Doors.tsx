// Doors: search the tenant's locks on the server, page by page; for one, who can open it now and why, on which
// schedule (in the lock's own time), and its health.
import { useState, type FormEvent } from 'react';
import { formatTime, nextCursor, operator, type Schemas } from '../api.ts';
import type { ScreenProps } from '../App.tsx';
import { scheduleWindows } from '../lock-time.ts';
import { lockTime } from '../wall-clock.ts';
import { Field, Status, Table, must, useLoad } from '../ui.tsx';

/** Doors a page: the list is searched and paged by the server (GET /operatorapi/securedobjects?search=). */
export const DOORS_PER_PAGE = 25;

/** The schedule of one access, on the lock's wall clock, and the window that lets it open now, there and in UTC. */
function scheduleText(entry: Schemas['DoorAccess'], timeZone: string): string {
  if (!entry.schedule) return 'Any time between its dates';
  const windows = `${scheduleWindows(entry.schedule)} (${timeZone})`;
  if (!entry.nextWindow) return windows;
  const { start, end } = entry.nextWindow;
  return `${windows}. Open now: ${lockTime(start, timeZone)} to ${lockTime(end, timeZone)} lock time (until ${formatTime(end)})`;
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
          <p>Schedules are read on the lock&apos;s own clock, in its time zone ({data.detail.timeZone}).</p>
          <Table
            caption={`Phones that can open ${id} now`}
            headers={['Phone', 'Resident', 'Why', 'Valid', 'Schedule', 'Key bound']}
            empty="Nobody can open this door now."
            rows={data.who.map((entry) => [
              entry.mobileDeviceId,
              entry.residentName ?? entry.residentId ?? '—',
              entry.accessPermissionId ? `Access permission ${entry.accessPermissionId}` : `Ticket ${entry.tokenId}${entry.override ? ' (override)' : ''}`,
              `${formatTime(entry.beginDate)} – ${formatTime(entry.endDate)}`,
              scheduleText(entry, data.detail.timeZone),
              entry.keyBound ? 'Yes' : 'No',
            ])}
          />
        </>
      ) : null}
    </section>
  );
}

/** One page of doors: the search and the cursor of the page (undefined: the first). */
async function doorPage(search: string, cursor: string | undefined) {
  const result = await operator.GET('/operatorapi/securedobjects', {
    params: { query: { limit: DOORS_PER_PAGE, ...(search ? { search } : {}), ...(cursor ? { cursor } : {}) } },
  });
  return { doors: must(result), next: nextCursor(result.response) };
}

export function DoorsScreen({ navigate, search }: ScreenProps) {
  const applied = (search.get('q') ?? '').trim();
  const [query, setQuery] = useState(applied);
  const selected = search.get('door');
  // The cursors of the pages shown so far: the last is the page on screen (undefined: the first page).
  const [pages, setPages] = useState<(string | undefined)[]>([undefined]);
  const [pagesOf, setPagesOf] = useState(applied);
  // A new search starts at its first page.
  if (pagesOf !== applied) {
    setPagesOf(applied);
    setPages([undefined]);
  }
  const cursor = pages[pages.length - 1];
  const { data, busy, error } = useLoad(() => doorPage(applied, cursor), [applied, cursor]);

  const submit = (event: FormEvent) => {
    event.preventDefault();
    navigate(`/console/doors?q=${encodeURIComponent(query.trim())}`);
  };
  // The pager's buttons stay focusable when there is no page that way (aria-disabled), so a keyboard user paging on
  // keeps the focus where it was.
  const canGoBack = !busy && pages.length > 1;
  const canGoOn = !busy && Boolean(data?.next);
  const back = () => {
    if (canGoBack) setPages(pages.slice(0, -1));
  };
  const onward = () => {
    if (canGoOn) setPages([...pages, data!.next]);
  };
  const matching = applied ? ` matching “${applied}”` : '';
  const message = data
    ? data.doors.length === 0
      ? `No door${matching}.`
      : `Page ${pages.length}: ${data.doors.length} door${data.doors.length === 1 ? '' : 's'}${matching}${data.next ? ', more on the next page' : ''}.`
    : null;
  return (
    <>
      <h1>Doors</h1>
      <form role="search" onSubmit={submit} aria-label="Search doors">
        <Field label="Door id or name contains" hint="Searched on the server, ignoring case; empty shows every door.">
          <input type="search" name="q" value={query} onChange={(event) => setQuery(event.target.value)} />
        </Field>
        <button type="submit">Search</button>
      </form>
      <Status busy={busy} error={error} message={message} />
      <Table
        caption={`Doors, page ${pages.length}`}
        headers={['Door', 'Bluetooth name', 'Channels', 'Time zone', 'Key registered', 'Details']}
        empty={`No door${matching}.`}
        rows={(data?.doors ?? []).map((door) => [
          door.id,
          door.urls.map((url) => url.replace(/^[a-z]+:\/\//, '').split('/')[0]).join(', '),
          door.channels.join(', '),
          door.timeZone,
          door.keyThumbprint ? 'Yes' : 'No',
          <a
            key={door.id}
            href={`/console/doors?door=${encodeURIComponent(door.id)}`}
            onClick={(event) => {
              event.preventDefault();
              navigate(`/console/doors?door=${encodeURIComponent(door.id)}&q=${encodeURIComponent(applied)}`);
            }}
          >
            Who can open {door.id}
          </a>,
        ])}
      />
      <nav className="pager" aria-label="Pages of doors">
        <button type="button" aria-disabled={!canGoBack} onClick={back}>
          Previous page
        </button>
        <button type="button" aria-disabled={!canGoOn} onClick={onward}>
          Next page
        </button>
      </nav>
      {selected ? <DoorDetail id={selected} /> : null}
    </>
  );
}
