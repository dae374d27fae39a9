// Bulk imports: upload a CSV file of one type, follow the job's progress, read the per-item results.
import { useEffect, useRef, useState, type FormEvent } from 'react';
import { operator, type OperatorPaths, type Schemas } from '../api.ts';
import { Field, Status, Table, must } from '../ui.tsx';

type JobType = NonNullable<NonNullable<OperatorPaths['/operatorapi/jobs']['post']['parameters']['query']>['type']>;

const TYPES: { value: JobType; label: string }[] = [
  { value: 'secured-objects', label: 'Doors (secured objects)' },
  { value: 'mobile-devices', label: 'Phones (mobile devices)' },
  { value: 'residents', label: 'Residents' },
  { value: 'lock-groups', label: 'Lock groups' },
  { value: 'access-permissions', label: 'Access permissions' },
  { value: 'tickets', label: 'Tickets' },
];

/** A random key (crypto.randomUUID exists only in a secure context; getRandomValues everywhere). */
function idempotencyKey(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (byte) => byte.toString(16).padStart(2, '0')).join('');
}

export function ImportsScreen() {
  const [type, setType] = useState<JobType>('mobile-devices');
  const [file, setFile] = useState<File | null>(null);
  const [job, setJob] = useState<Schemas['Job'] | null>(null);
  const [results, setResults] = useState<Schemas['JobResult'][]>([]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const timer = useRef<number | undefined>(undefined);
  useEffect(() => () => clearTimeout(timer.current), []);

  async function follow(id: string) {
    try {
      const current = must(await operator.GET('/operatorapi/jobs/{id}', { params: { path: { id } } }));
      setJob(current);
      if (current.state === 'queued' || current.state === 'running') {
        timer.current = window.setTimeout(() => void follow(id), 500);
        return;
      }
      setResults(must(await operator.GET('/operatorapi/jobs/{id}/results', { params: { path: { id }, query: { limit: 1000 } } })));
      setBusy(false);
    } catch (caught) {
      setError(caught instanceof Error ? caught.message : String(caught));
      setBusy(false);
    }
  }

  async function submit(event: FormEvent) {
    event.preventDefault();
    if (!file) return;
    setBusy(true);
    setError(null);
    setJob(null);
    setResults([]);
    try {
      const text = await file.text();
      const created = must(
        await operator.POST('/operatorapi/jobs', {
          params: { query: { type } },
          // The CSV body of the documented text/csv request (RFC 4180), sent as it was read.
          body: text as never,
          bodySerializer: (body: unknown) => String(body),
          headers: { 'content-type': 'text/csv; charset=utf-8', 'idempotency-key': idempotencyKey() },
        }),
      );
      setJob(created);
      await follow(created.id);
    } catch (caught) {
      setError(caught instanceof Error ? caught.message : String(caught));
      setBusy(false);
    }
  }

  const done = job && !['queued', 'running'].includes(job.state);
  return (
    <>
      <h1>Bulk imports</h1>
      <p>Upload a CSV file (UTF-8, comma separated, a header row naming the fields of each item). Each row is created on its own; a bad row fails alone.</p>
      <form onSubmit={submit}>
        <Field label="What the rows are">
          <select name="type" value={type} onChange={(event) => setType(event.target.value as JobType)}>
            {TYPES.map((option) => (
              <option key={option.value} value={option.value}>
                {option.label}
              </option>
            ))}
          </select>
        </Field>
        <Field label="CSV file">
          <input name="file" type="file" accept=".csv,text/csv" required onChange={(event) => setFile(event.target.files?.[0] ?? null)} />
        </Field>
        <button type="submit" disabled={busy || !file}>
          Import
        </button>
      </form>
      <Status
        busy={false}
        error={error}
        message={job ? `Job ${job.id} ${job.state}: ${job.processed} of ${job.total} processed, ${job.succeeded} succeeded, ${job.failed} failed.` : busy ? 'Uploading…' : null}
      />
      {job ? (
        <progress max={Math.max(job.total, 1)} value={job.processed} aria-label="Import progress">
          {job.processed} of {job.total}
        </progress>
      ) : null}
      {done ? (
        <Table
          caption="Results per row"
          headers={['Row', 'Key', 'Outcome', 'Id', 'Problem']}
          empty="No result."
          rows={results.map((result) => [
            String(result.index + 1),
            result.key,
            result.outcome,
            result.id ?? '—',
            result.problem ? String((result.problem as { detail?: string; title?: string }).detail ?? (result.problem as { title?: string }).title ?? '') : '',
          ])}
        />
      ) : null}
    </>
  );
}
