// Explain: would this phone open that door at a time, and why (GET /operatorapi/access-checks).
import { useState, type FormEvent } from 'react';
import { formatTime, operator, type Schemas } from '../api.ts';
import { Field, Status, Table, must } from '../ui.tsx';

export function ExplainScreen() {
  const [phone, setPhone] = useState('');
  const [door, setDoor] = useState('');
  const [at, setAt] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [answer, setAnswer] = useState<Schemas['AccessCheck'] | null>(null);

  async function submit(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    setError(null);
    setAnswer(null);
    try {
      const when = at ? Date.parse(`${at}Z`) : undefined;
      if (when !== undefined && Number.isNaN(when)) throw new Error('The time is not a valid date and time.');
      setAnswer(
        must(
          await operator.GET('/operatorapi/access-checks', {
            params: { query: { mobileDeviceId: phone.trim(), securedObjectId: door.trim(), ...(when !== undefined ? { at: when } : {}) } },
          }),
        ),
      );
    } catch (caught) {
      setError(caught instanceof Error ? caught.message : String(caught));
    } finally {
      setBusy(false);
    }
  }

  return (
    <>
      <h1>Explain</h1>
      <p>Would this phone open that door at this time? The answer gives every reason the service knows.</p>
      <form onSubmit={submit}>
        <Field label="Phone id">
          <input name="mobileDeviceId" required value={phone} onChange={(event) => setPhone(event.target.value)} />
        </Field>
        <Field label="Door id">
          <input name="securedObjectId" required value={door} onChange={(event) => setDoor(event.target.value)} />
        </Field>
        <Field label="At (UTC)" hint="Leave empty for now.">
          <input name="at" type="datetime-local" step="1" value={at} onChange={(event) => setAt(event.target.value)} />
        </Field>
        <button type="submit" disabled={busy}>
          Explain
        </button>
      </form>
      <Status busy={busy} error={error} message={answer ? `Decision: ${answer.decision}.` : null} />
      {answer ? (
        <section aria-labelledby="answer-heading">
          <h2 id="answer-heading">
            {answer.decision === 'allow' ? 'It would open' : 'It would not open'} at {formatTime(answer.at)}
          </h2>
          <p>Lock time: {formatTime(answer.lockTime)}</p>
          <ul>
            {answer.reasons.map((reason, index) => (
              <li key={index}>
                <strong>{reason.code}</strong>: {reason.message}
              </li>
            ))}
          </ul>
          <Table
            caption="Tickets considered"
            headers={['Ticket', 'Status', 'Decision', 'Reasons']}
            empty="No ticket of this phone for this door."
            rows={answer.tokens.map((token) => [token.id, token.status, token.decision, token.reasons.map((reason) => reason.message).join(' ')])}
          />
        </section>
      ) : null}
    </>
  );
}
