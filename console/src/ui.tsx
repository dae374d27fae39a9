// Small accessible building blocks shared by the screens: a live status region, a labelled field, a data table.
import { useCallback, useEffect, useRef, useState, type ReactNode } from 'react';

/** Announces async status politely (role=status); errors assertively (role=alert). */
export function Status({ busy, error, message }: { busy?: boolean; error?: string | null; message?: string | null }) {
  return (
    <>
      <p role="status" aria-live="polite" className="status">
        {busy ? 'Loading…' : (message ?? '')}
      </p>
      {error ? (
        <p role="alert" className="error">
          {error}
        </p>
      ) : null}
    </>
  );
}

export function Field({ label, children, hint }: { label: string; children: ReactNode; hint?: string }) {
  return (
    <label className="field">
      <span className="label">{label}</span>
      {children}
      {hint ? <span className="hint">{hint}</span> : null}
    </label>
  );
}

export function Table({ caption, headers, rows, empty }: { caption: string; headers: string[]; rows: ReactNode[][]; empty: string }) {
  if (rows.length === 0) return <p className="empty">{empty}</p>;
  return (
    <div className="table-wrap" role="region" aria-label={caption} tabIndex={0}>
      <table>
        <caption>{caption}</caption>
        <thead>
          <tr>
            {headers.map((header) => (
              <th key={header} scope="col">
                {header}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row, index) => (
            <tr key={index}>
              {row.map((cell, cellIndex) => (
                <td key={cellIndex}>{cell}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Runs `load` now and whenever `reload` is called; tracks busy and error. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]) {
  const [data, setData] = useState<T | null>(null);
  const [busy, setBusy] = useState(true);
  const [error, setError] = useState<string | null>(null);
  const generation = useRef(0);
  const run = useCallback(async () => {
    const mine = ++generation.current;
    setBusy(true);
    setError(null);
    try {
      const result = await load();
      if (mine === generation.current) setData(result);
    } catch (caught) {
      if (mine === generation.current) setError(caught instanceof Error ? caught.message : String(caught));
    } finally {
      if (mine === generation.current) setBusy(false);
    }
    // The caller names the dependencies, as with useEffect.
  }, deps);
  useEffect(() => {
    void run();
  }, [run]);
  return { data, busy, error, reload: run, setError };
}

/** Throws the problem's text when an openapi-fetch call failed; answers its data otherwise. */
export function must<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.data === undefined) {
    const problem = result.error as { detail?: string; title?: string } | undefined;
    throw new Error(problem?.detail ?? problem?.title ?? `The server answered ${result.response.status}.`);
  }
  return result.data;
}
