// Claims: create one for a resident or a phone, show its link as a QR code (once: the code is shown only at creation),
// list their states, revoke.
import { useState, type FormEvent } from 'react';
import { formatTime, operator, type Schemas } from '../api.ts';
import { QrCode } from '../qr.tsx';
import { Field, Status, Table, must, useLoad } from '../ui.tsx';

export function ClaimsScreen() {
  const [target, setTarget] = useState<'residentId' | 'mobileDeviceId'>('residentId');
  const [targetId, setTargetId] = useState('');
  const [note, setNote] = useState('');
  const [maxDevices, setMaxDevices] = useState('1');
  const [hours, setHours] = useState('72');
  const [created, setCreated] = useState<Schemas['CreatedClaim'] | null>(null);
  const [busy, setBusy] = useState(false);
  const [actionError, setActionError] = useState<string | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const list = useLoad(async () => must(await operator.GET('/operatorapi/claims', { params: { query: { limit: 100 } } })), []);

  async function create(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    setActionError(null);
    try {
      const claim = must(
        await operator.POST('/operatorapi/claims', {
          body: { [target]: targetId.trim(), maxDevices: Number(maxDevices), expiresIn: Number(hours) * 3600, ...(note.trim() ? { note: note.trim() } : {}) },
        }),
      );
      setCreated(claim);
      setMessage(`Claim ${claim.id} created: show its QR code to the person now; it is not shown again.`);
      await list.reload();
    } catch (caught) {
      setActionError(caught instanceof Error ? caught.message : String(caught));
    } finally {
      setBusy(false);
    }
  }

  async function revoke(id: string) {
    setBusy(true);
    setActionError(null);
    try {
      const result = await operator.DELETE('/operatorapi/claims/{id}', { params: { path: { id } } });
      if (!result.response.ok) must(result as { data?: unknown; error?: unknown; response: Response });
      setMessage(`Claim ${id} revoked.`);
      if (created?.id === id) setCreated(null);
      await list.reload();
    } catch (caught) {
      setActionError(caught instanceof Error ? caught.message : String(caught));
    } finally {
      setBusy(false);
    }
  }

  return (
    <>
      <h1>Claims</h1>
      <form onSubmit={create} aria-labelledby="new-claim">
        <h2 id="new-claim">New claim</h2>
        <Field label="For">
          <select name="target" value={target} onChange={(event) => setTarget(event.target.value as typeof target)}>
            <option value="residentId">A resident</option>
            <option value="mobileDeviceId">A phone</option>
          </select>
        </Field>
        <Field label={target === 'residentId' ? 'Resident id' : 'Phone id'}>
          <input name="targetId" required value={targetId} onChange={(event) => setTargetId(event.target.value)} />
        </Field>
        <Field label="Phones it may enrol">
          <input name="maxDevices" type="number" min={1} max={10} required value={maxDevices} onChange={(event) => setMaxDevices(event.target.value)} />
        </Field>
        <Field label="Valid for (hours)">
          <input name="hours" type="number" min={1} max={720} required value={hours} onChange={(event) => setHours(event.target.value)} />
        </Field>
        <Field label="Note (optional)">
          <input name="note" value={note} onChange={(event) => setNote(event.target.value)} />
        </Field>
        <button type="submit" disabled={busy}>
          Create claim
        </button>
      </form>
      <Status busy={busy || list.busy} error={actionError ?? list.error} message={message} />
      {created ? (
        <section aria-labelledby="created-claim" className="card">
          <h2 id="created-claim">Claim {created.id}</h2>
          <QrCode text={created.url} label={`QR code of the claim link for ${created.residentId ?? created.mobileDeviceId ?? created.id}`} />
          <p>
            Link: <code className="break">{created.url}</code>
          </p>
          <p>Expires {formatTime(created.expiresAt)}.</p>
        </section>
      ) : null}
      <Table
        caption="Claims"
        headers={['Claim', 'For', 'State', 'Phones', 'Expires', 'Action']}
        empty="No claim yet."
        rows={(list.data ?? []).map((claim) => [
          claim.id,
          claim.residentId ? `Resident ${claim.residentId}` : `Phone ${claim.mobileDeviceId ?? '?'}`,
          claim.state,
          `${claim.devices.length} of ${claim.maxDevices}`,
          formatTime(claim.expiresAt),
          claim.state === 'created' || claim.state === 'opened' ? (
            <button key={claim.id} type="button" onClick={() => void revoke(claim.id)} disabled={busy}>
              Revoke claim {claim.id}
            </button>
          ) : (
            '—'
          ),
        ])}
      />
    </>
  );
}
