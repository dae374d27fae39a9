// People: residents, their phones with key status, their permissions and tickets; "revoke everywhere" with a
// confirmation and a live count of the doors that applied the revocation.
import { useEffect, useRef, useState } from 'react';
import { access, formatTime, nextCursor, operator, type AccessSchemas, type Schemas } from '../api.ts';
import type { ScreenProps } from '../App.tsx';
import { Status, Table, must, useLoad } from '../ui.tsx';

async function allResidents(): Promise<AccessSchemas['Resident'][]> {
  const residents: AccessSchemas['Resident'][] = [];
  let cursor: string | undefined;
  do {
    const result = await access.GET('/v1/residents', { params: { query: { limit: 1000, ...(cursor ? { cursor } : {}) } } });
    residents.push(...must(result));
    cursor = nextCursor(result.response);
  } while (cursor && residents.length < 10_000);
  return residents;
}

/** Every revoked ticket of the resident (applied or not), to count the doors of one revocation. */
async function revocationsOf(residentId: string): Promise<Schemas['Ticket'][]> {
  const tickets: Schemas['Ticket'][] = [];
  let cursor: string | undefined;
  do {
    const result = await operator.GET('/operatorapi/revocations', { params: { query: { residentId, limit: 1000, ...(cursor ? { cursor } : {}) } } });
    tickets.push(...must(result));
    cursor = nextCursor(result.response);
  } while (cursor);
  return tickets;
}

interface Progress {
  revoked: number;
  doorsApplied: number;
  doorsPending: number;
}

function progressOf(tokenIds: Set<string>, revoked: number, tickets: Schemas['Ticket'][]): Progress {
  const pendingDoors = new Set<string>();
  const doors = new Set<string>();
  for (const ticket of tickets) {
    if (!tokenIds.has(ticket.id)) continue;
    doors.add(ticket.securedObjectId);
    if (ticket.revocationAppliedTime === undefined) pendingDoors.add(ticket.securedObjectId);
  }
  return { revoked, doorsApplied: doors.size - pendingDoors.size, doorsPending: pendingDoors.size };
}

function RevokeEverywhere({ resident, onRevoked }: { resident: AccessSchemas['Resident']; onRevoked: () => void }) {
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [progress, setProgress] = useState<Progress | null>(null);
  const confirmRef = useRef<HTMLButtonElement>(null);
  const timer = useRef<number | undefined>(undefined);

  useEffect(() => () => clearTimeout(timer.current), []);
  useEffect(() => {
    if (confirming) confirmRef.current?.focus();
  }, [confirming]);

  async function revoke() {
    setBusy(true);
    setError(null);
    try {
      const answer = must(await access.POST('/v1/residents/{id}/revocations', { params: { path: { id: resident.id } } }));
      setConfirming(false);
      onRevoked();
      const tokenIds = new Set(answer.tokenIds);
      const poll = async () => {
        try {
          const next = progressOf(tokenIds, answer.revoked, await revocationsOf(resident.id));
          setProgress(next);
          if (next.doorsPending > 0) timer.current = window.setTimeout(() => void poll(), 1000);
        } catch (caught) {
          setError(caught instanceof Error ? caught.message : String(caught));
        }
      };
      setProgress({ revoked: answer.revoked, doorsApplied: 0, doorsPending: 0 });
      await poll();
    } catch (caught) {
      setError(caught instanceof Error ? caught.message : String(caught));
    } finally {
      setBusy(false);
    }
  }

  return (
    <section aria-labelledby="revoke-heading" className="danger-zone">
      <h3 id="revoke-heading">Revoke everywhere</h3>
      <p>Revokes every valid ticket of every phone of {resident.name}, direct and granted, at every door.</p>
      {confirming ? (
        <div role="group" aria-labelledby="confirm-text" className="confirm">
          <p id="confirm-text">
            Revoke every ticket of {resident.name} now? Their phones stop opening each door as soon as the door learns of it.
          </p>
          <button type="button" ref={confirmRef} className="danger" disabled={busy} onClick={() => void revoke()}>
            Yes, revoke everywhere
          </button>{' '}
          <button type="button" onClick={() => setConfirming(false)}>
            Cancel
          </button>
        </div>
      ) : (
        <button type="button" className="danger" onClick={() => setConfirming(true)}>
          Revoke {resident.name} everywhere…
        </button>
      )}
      <div role="status" aria-live="polite" className="status" data-testid="revocation-progress">
        {progress
          ? progress.doorsPending > 0
            ? `${progress.revoked} tickets revoked. Doors applied: ${progress.doorsApplied}, pending: ${progress.doorsPending}.`
            : progress.doorsApplied > 0
              ? `${progress.revoked} tickets revoked. All ${progress.doorsApplied} doors applied.`
              : `${progress.revoked} tickets revoked. No door holds a credential of them: nothing to wait for.`
          : ''}
      </div>
      {error ? (
        <p role="alert" className="error">
          {error}
        </p>
      ) : null}
    </section>
  );
}

function ResidentDetail({ id }: { id: string }) {
  const { data, busy, error, reload } = useLoad(async () => {
    const resident = must(await access.GET('/v1/residents/{id}', { params: { path: { id } } }));
    const [devices, permissions, tickets] = await Promise.all([
      Promise.all(resident.mobileDeviceIds.map((deviceId) => operator.GET('/operatorapi/mobiledevices/{id}', { params: { path: { id: deviceId } } }).then(must))),
      access.GET('/v1/access-permissions', { params: { query: { residentId: id, limit: 1000 } } }).then(must),
      Promise.all(
        resident.mobileDeviceIds.map((deviceId) =>
          operator.GET('/operatorapi/tickets', { params: { query: { mobileDeviceId: deviceId, limit: 1000 } } }).then(must),
        ),
      ).then((lists) => lists.flat()),
    ]);
    return { resident, devices, permissions, tickets };
  }, [id]);
  return (
    <section aria-labelledby="resident-heading">
      <h2 id="resident-heading">{data ? data.resident.name : `Resident ${id}`}</h2>
      <Status busy={busy} error={error} />
      {data ? (
        <>
          <Table
            caption="Phones"
            headers={['Phone', 'Name', 'Key status']}
            empty="No phone."
            rows={data.devices.map((device) => [
              device.id,
              device.name ?? '—',
              device.keyThumbprint ? `Key registered ${formatTime(device.keyRegisteredTime)}` : 'No key registered',
            ])}
          />
          <Table
            caption="Access permissions"
            headers={['Permission', 'Lock group', 'Valid', 'Tickets']}
            empty="No access permission."
            rows={data.permissions.map((permission) => [
              permission.id,
              permission.lockGroupId,
              `${formatTime(permission.beginDate)} – ${formatTime(permission.endDate)}`,
              String(permission.tokenCount),
            ])}
          />
          <Table
            caption="Tickets"
            headers={['Ticket', 'Door', 'Phone', 'Status', 'Valid']}
            empty="No ticket."
            rows={data.tickets.map((ticket) => [
              ticket.id,
              ticket.securedObjectId,
              ticket.mobileDeviceId,
              ticket.status,
              `${formatTime(ticket.beginDate)} – ${formatTime(ticket.endDate)}`,
            ])}
          />
          <RevokeEverywhere resident={data.resident} onRevoked={() => void reload()} />
        </>
      ) : null}
    </section>
  );
}

export function PeopleScreen({ navigate, search }: ScreenProps) {
  const selected = search.get('resident');
  const { data, busy, error } = useLoad(allResidents, []);
  return (
    <>
      <h1>People</h1>
      <Status busy={busy} error={error} message={data ? `${data.length} residents.` : null} />
      <Table
        caption="Residents"
        headers={['Name', 'Phones', 'Details']}
        empty="No resident yet."
        rows={(data ?? []).map((resident) => [
          resident.name,
          String(resident.mobileDeviceIds.length),
          <a
            key={resident.id}
            href={`/console/people?resident=${encodeURIComponent(resident.id)}`}
            onClick={(event) => {
              event.preventDefault();
              navigate(`/console/people?resident=${encodeURIComponent(resident.id)}`);
            }}
          >
            Open {resident.name}
          </a>,
        ])}
      />
      {selected ? <ResidentDetail key={selected} id={selected} /> : null}
    </>
  );
}
