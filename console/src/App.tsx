// The console's shell: sign-in, the callback, the navigation between screens (client routes under /console/), and a
// skip link and landmarks on every screen.
import { useEffect, useRef, useState, type FormEvent, type MouseEvent } from 'react';
import { currentSession, onSession, setSession } from './api.ts';
import { CALLBACK_PATH, finishSignIn, signOut, startSignIn } from './auth.ts';
import { Field, Status } from './ui.tsx';
import { DoorsScreen } from './screens/Doors.tsx';
import { PeopleScreen } from './screens/People.tsx';
import { ExplainScreen } from './screens/Explain.tsx';
import { AccessLogScreen } from './screens/AccessLog.tsx';
import { ClaimsScreen } from './screens/Claims.tsx';
import { EventsScreen } from './screens/Events.tsx';
import { ImportsScreen } from './screens/Imports.tsx';

export const SCREENS = [
  { path: '/console/doors', label: 'Doors', Screen: DoorsScreen },
  { path: '/console/people', label: 'People', Screen: PeopleScreen },
  { path: '/console/explain', label: 'Explain', Screen: ExplainScreen },
  { path: '/console/access-log', label: 'Access log', Screen: AccessLogScreen },
  { path: '/console/claims', label: 'Claims', Screen: ClaimsScreen },
  { path: '/console/events', label: 'Events and webhooks', Screen: EventsScreen },
  { path: '/console/imports', label: 'Bulk imports', Screen: ImportsScreen },
] as const;

function usePath(): [string, (path: string, replace?: boolean) => void] {
  const [path, setPath] = useState(location.pathname + location.search);
  useEffect(() => {
    const onPop = () => setPath(location.pathname + location.search);
    addEventListener('popstate', onPop);
    return () => removeEventListener('popstate', onPop);
  }, []);
  const navigate = (next: string, replace = false) => {
    if (replace) history.replaceState(null, '', next);
    else history.pushState(null, '', next);
    setPath(next);
  };
  return [path, navigate];
}

function SignIn({ returnTo }: { returnTo: string }) {
  const initial = new URLSearchParams(location.search).get('tenant') ?? '';
  const [tenant, setTenant] = useState(initial);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  async function submit(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await startSignIn(tenant.trim(), returnTo);
    } catch (caught) {
      setError(caught instanceof Error ? caught.message : String(caught));
      setBusy(false);
    }
  }
  return (
    <main id="main" className="sign-in" tabIndex={-1}>
      <h1>Operator console</h1>
      <p>Sign in with your user name and password at your organisation&apos;s tenant. You will be taken to the server&apos;s sign-in page and brought back here.</p>
      <form onSubmit={submit}>
        <Field label="Tenant" hint="The tenant name your administrator gave you, for example acme.">
          <input name="tenant" autoComplete="organization" required value={tenant} onChange={(event) => setTenant(event.target.value)} />
        </Field>
        <button type="submit" disabled={busy}>
          Continue to sign-in
        </button>
      </form>
      <Status busy={busy} error={error} />
    </main>
  );
}

function Callback({ onDone }: { onDone: (returnTo: string) => void }) {
  const [error, setError] = useState<string | null>(null);
  const started = useRef(false);
  useEffect(() => {
    if (started.current) return;
    started.current = true;
    finishSignIn(new URLSearchParams(location.search))
      .then(({ session, returnTo }) => {
        setSession(session);
        onDone(returnTo);
      })
      .catch((caught: unknown) => setError(caught instanceof Error ? caught.message : String(caught)));
  }, [onDone]);
  return (
    <main id="main" tabIndex={-1}>
      <h1>Signing in</h1>
      <Status busy={!error} error={error} />
      {error ? <a href="/console/">Back to the sign-in</a> : null}
    </main>
  );
}

export function App() {
  const [session, setLocalSession] = useState(currentSession());
  const [path, navigate] = usePath();
  useEffect(() => onSession(setLocalSession), []);
  const pathname = path.split('?')[0]!;
  const mainRef = useRef<HTMLElement>(null);

  useEffect(() => {
    // After a client-side navigation, move focus to the new screen's main region (its heading is read first).
    mainRef.current?.focus();
  }, [pathname]);

  if (pathname === CALLBACK_PATH) return <Callback onDone={(returnTo) => navigate(returnTo, true)} />;
  if (!session) return <SignIn returnTo={pathname.startsWith('/console/') && pathname !== '/console/' ? path : '/console/doors'} />;

  const screen = SCREENS.find((candidate) => pathname === candidate.path) ?? SCREENS[0];
  const follow = (event: MouseEvent<HTMLAnchorElement>, target: string) => {
    if (event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) return;
    event.preventDefault();
    navigate(target);
  };
  const Screen = screen.Screen;
  return (
    <>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="top">
        <p className="brand">Operator console</p>
        <p className="who">
          Tenant <strong>{session.tenant}</strong>
        </p>
        <button
          type="button"
          onClick={() => {
            void signOut(session);
            setSession(null);
          }}
        >
          Sign out
        </button>
      </header>
      <nav aria-label="Screens">
        <ul>
          {SCREENS.map((candidate) => (
            <li key={candidate.path}>
              <a href={candidate.path} aria-current={candidate === screen ? 'page' : undefined} onClick={(event) => follow(event, candidate.path)}>
                {candidate.label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" ref={mainRef} tabIndex={-1}>
        <Screen key={screen.path} navigate={navigate} search={new URLSearchParams(path.split('?')[1] ?? '')} />
      </main>
    </>
  );
}

export interface ScreenProps {
  navigate: (path: string) => void;
  search: URLSearchParams;
}
