// Access log: filters, cursor paging, and a CSV export of every page (no row cap).
import { useState, type FormEvent } from 'react';
import { formatTime, nextCursor, operator, type Schemas } from '../api.ts';
import { Field, Status, Table, must } from '../ui.tsx';

interface Filters {
  securedObjectId: string;
  mobileDeviceId: string;
  result: '' | 'granted' | 'denied';
}

type Entry = Schemas['AccessLogEntry'];

function queryOf(filters: Filters, cursor?: string) {
  return {
    limit: 100,
    ...(filters.securedObjectId ? { securedObjectId: filters.securedObjectId } : {}),
    ...(filters.mobileDeviceId ? { mobileDeviceId: filters.mobileDeviceId } : {}),
    ...(filters.result ? { result: filters.result } : {}),
    ...(cursor ? { cursor } : {}),
  };
}

const CSV_COLUMNS: (keyof Entry)[] = ['securedObjectId', 'entryNo', 'lockTime', 'tokenId', 'mobileDeviceId', 'command', 'channel', 'result', 'reason', 'receivedTime', 'via', 'signed', 'clockOffset'];

/** RFC 4180: a field with a comma, quote or line break is quoted, its quotes doubled. */
function csvField(value: unknown): string {
  const text = value === undefined || value === null ? '' : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function AccessLogScreen() {
  const [filters, setFilters] = useState<Filters>({ securedObjectId: '', mobileDeviceId: '', result: '' });
  const [applied, setApplied] = useState<Filters | null>(null);
  const [pages, setPages] = useState<(string | undefined)[]>([undefined]);
  const [entries, setEntries] = useState<Entry[]>([]);
  const [next, setNext] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const [download, setDownload] = useState<string | null>(null);

  async function load(using: Filters, cursor: string | undefined, history: (string | undefined)[]) {
    setBusy(true);
    setError(null);
    try {
      const result = await operator.GET('/operatorapi/accesslog', { params: { query: queryOf(using, cursor) } });
      const page = must(result);
      setEntries(page);
      setNext(nextCursor(result.response));
      setPages(history);
      setApplied(using);
      setMessage(`Page ${history.length}: ${page.length} entries.`);
    } catch (caught) {
      setError(caught instanceof Error ? caught.message : String(caught));
    } finally {
      setBusy(false);
    }
  }

  async function exportCsv() {
    if (!applied) return;
    setBusy(true);
    setError(null);
    try {
      const lines = [CSV_COLUMNS.join(',')];
      let cursor: string | undefined;
      do {
        const result = await operator.GET('/operatorapi/accesslog', { params: { query: { ...queryOf(applied, cursor), limit: 1000 } } });
        for (const entry of must(result)) lines.push(CSV_COLUMNS.map((column) => csvField(entry[column])).join(','));
        cursor = nextCursor(result.response);
        setMessage(`Exporting: ${lines.length - 1} rows so far…`);
      } while (cursor);
      if (download) URL.revokeObjectURL(download);
      const url = URL.createObjectURL(new Blob([`${lines.join('\r\n')}\r\n`], { type: 'text/csv;charset=utf-8' }));
      setDownload(url);
      setMessage(`Export ready: ${lines.length - 1} rows.`);
    } catch (caught) {
      setError(caught instanceof Error ? caught.message : String(caught));
    } finally {
      setBusy(false);
    }
  }

  const submit = (event: FormEvent) => {
    event.preventDefault();
    void load(filters, undefined, [undefined]);
  };

  return (
    <>
      <h1>Access log</h1>
      <form onSubmit={submit} aria-label="Filter the access log">
        <Field label="Door id">
          <input name="securedObjectId" value={filters.securedObjectId} onChange={(event) => setFilters({ ...filters, securedObjectId: event.target.value })} />
        </Field>
        <Field label="Phone id">
          <input name="mobileDeviceId" value={filters.mobileDeviceId} onChange={(event) => setFilters({ ...filters, mobileDeviceId: event.target.value })} />
        </Field>
        <Field label="Result">
          <select name="result" value={filters.result} onChange={(event) => setFilters({ ...filters, result: event.target.value as Filters['result'] })}>
            <option value="">Any</option>
            <option value="granted">Granted</option>
            <option value="denied">Denied</option>
          </select>
        </Field>
        <button type="submit" disabled={busy}>
          Show entries
        </button>
      </form>
      <Status busy={busy} error={error} message={message} />
      {applied ? (
        <>
          <Table
            caption="Access log entries"
            headers={['Door', 'Entry', 'Lock time', 'Phone', 'Command', 'Result', 'Reason', 'Received']}
            empty="No entry matches."
            rows={entries.map((entry) => [
              entry.securedObjectId,
              String(entry.entryNo),
              formatTime(entry.lockTime),
              entry.mobileDeviceId ?? '—',
              entry.command,
              entry.result,
              entry.reason ?? '',
              formatTime(entry.receivedTime),
            ])}
          />
          <div className="pager">
            <button type="button" disabled={busy || pages.length < 2} onClick={() => void load(applied, pages[pages.length - 2], pages.slice(0, -1))}>
              Previous page
            </button>{' '}
            <button type="button" disabled={busy || !next} onClick={() => void load(applied, next, [...pages, next])}>
              Next page
            </button>{' '}
            <button type="button" disabled={busy} onClick={() => void exportCsv()}>
              Export all pages as CSV
            </button>{' '}
            {download ? (
              <a href={download} download="access-log.csv">
                Download access-log.csv
              </a>
            ) : null}
          </div>
        </>
      ) : null}
    </>
  );
}
