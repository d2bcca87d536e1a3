import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { LiveStatus } from './live.js';
import { LiveBus, useBus } from './live.js';
import type { Route } from './router.js';
import { href, useRoute, VIEWS } from './router.js';
import type { Session } from './session.js';
import { forgetToken, signIn, storedToken } from './session.js';
import { ErrorBox } from './ui.js';
import { AnalyticsView } from './views/analytics-view.js';
import { BoardsView } from './views/boards-view.js';
import { CapabilitiesView } from './views/capabilities-view.js';
import { FeedView } from './views/feed-view.js';
import { HandoffView } from './views/handoff-view.js';
import { InsightsView } from './views/insights-view.js';
import { ItemView } from './views/item-view.js';
import { PreviewView } from './views/preview-view.js';
import { SubscriptionsView } from './views/subscriptions-view.js';
import { TasksView } from './views/tasks-view.js';
import { WriteView } from './views/write-view.js';

const STATUS_TEXT: Record<LiveStatus, string> = {
  loading: 'loading',
  connecting: 'connecting',
  live: 'live',
  reconnecting: 'reconnecting',
  closed: 'stopped',
  stopped: 'stopped',
};

function SignIn({
  onSession,
  initialError,
}: {
  onSession: (session: Session) => void;
  initialError: unknown;
}) {
  const [error, setError] = useState<unknown>(initialError);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    const token = String(
      new FormData(event.currentTarget as HTMLFormElement).get('token') ?? '',
    ).trim();
    if (!token) {
      setError(new Error('enter a token'));
      return;
    }
    setBusy(true);
    setError(null);
    try {
      onSession(await signIn(token));
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main id="main" class="signin">
      <h1>ctxbus</h1>
      <form onSubmit={submit} aria-describedby="signin-help">
        <div class="field">
          <label for="token">Runtime token</label>
          <input id="token" name="token" type="password" autoComplete="off" required />
        </div>
        <p id="signin-help" class="hint">
          A runtime token of your team, for example from{' '}
          <code>ctxbus token create --runtime web</code>. It is kept in this tab only and forgotten
          when the tab closes.
        </p>
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      <ErrorBox error={error} />
    </main>
  );
}

function View({ route, session, bus }: { route: Route; session: Session; bus: LiveBus }) {
  const { client, identity } = session;
  switch (route.view) {
    case 'item':
      return <ItemView bus={bus} client={client} id={route.id ?? ''} />;
    case 'write':
      return <WriteView client={client} />;
    case 'preview':
      return <PreviewView bus={bus} client={client} ownRuntime={identity.runtime} />;
    case 'tasks':
      return <TasksView bus={bus} client={client} />;
    case 'capabilities':
      return <CapabilitiesView client={client} />;
    case 'subscriptions':
      return <SubscriptionsView bus={bus} client={client} runtime={identity.runtime} />;
    case 'handoff':
      return <HandoffView bus={bus} />;
    case 'boards':
      return <BoardsView bus={bus} />;
    case 'insights':
      return <InsightsView bus={bus} />;
    case 'analytics':
      return <AnalyticsView bus={bus} client={client} />;
    default:
      return <FeedView bus={bus} client={client} />;
  }
}

function Dashboard({ session, onSignOut }: { session: Session; onSignOut: () => void }) {
  const route = useRoute();
  const bus = useMemo(() => new LiveBus(session.client), [session]);
  useEffect(() => {
    bus.start();
    return () => bus.stop();
  }, [bus]);
  useBus(bus);
  const main = useRef<HTMLElement>(null);
  const first = useRef(true);
  // After navigating, move focus to the new view's heading (screen readers announce it).
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    main.current?.querySelector<HTMLElement>('#view-title')?.focus();
  }, [route.view, route.id]);
  const current = route.view === 'item' ? 'feed' : route.view;
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">ctxbus</span>
        <nav aria-label="Views">
          <ul>
            {VIEWS.map((view) => (
              <li key={view.id}>
                <a href={href(view.id)} aria-current={view.id === current ? 'page' : undefined}>
                  {view.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="who">
          <span class={`live live-${bus.status}`} role="status" data-testid="live-status">
            {STATUS_TEXT[bus.status]}
          </span>
          <span data-testid="identity">
            {session.identity.teamId}/{session.identity.runtime}
          </span>
          <button type="button" class="secondary" onClick={onSignOut}>
            Sign out
          </button>
        </div>
      </header>
      {bus.error && <ErrorBox error={bus.error} />}
      <main id="main" ref={main}>
        <View route={route} session={session} bus={bus} />
      </main>
    </>
  );
}

export function App() {
  const [session, setSession] = useState<Session | null>(null);
  const [restoring, setRestoring] = useState(() => storedToken() !== null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    const token = storedToken();
    if (!token) return;
    signIn(token).then(
      (restored) => {
        setSession(restored);
        setRestoring(false);
      },
      (failure) => {
        forgetToken();
        setError(failure);
        setRestoring(false);
      },
    );
  }, []);
  if (restoring) return <p aria-busy="true">Signing in…</p>;
  if (!session) return <SignIn onSession={setSession} initialError={error} />;
  return (
    <Dashboard
      session={session}
      onSignOut={() => {
        forgetToken();
        setSession(null);
      }}
    />
  );
}
