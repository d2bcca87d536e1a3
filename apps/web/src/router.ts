import { useEffect, useState } from 'preact/hooks';

// Hash routes (#/feed, #/item/<id>, ...): the hub serves one page, and a route never carries the
// token.
export const VIEWS = [
  { id: 'feed', label: 'Feed' },
  { id: 'write', label: 'Write' },
  { id: 'preview', label: 'Preview' },
  { id: 'tasks', label: 'Tasks' },
  { id: 'capabilities', label: 'Capabilities' },
  { id: 'subscriptions', label: 'Subscriptions' },
  { id: 'handoff', label: 'Handoff' },
  { id: 'boards', label: 'Boards' },
  { id: 'insights', label: 'Insights' },
  { id: 'analytics', label: 'Analytics' },
] as const;

export type ViewId = (typeof VIEWS)[number]['id'] | 'item';

export interface Route {
  view: ViewId;
  /** The item id of `#/item/<id>`. */
  id?: string;
}

export function parseRoute(hash: string): Route {
  const [view = '', id] = hash.replace(/^#\/?/, '').split('/');
  if (view === 'item' && id) return { view: 'item', id: decodeURIComponent(id) };
  const known = VIEWS.find((entry) => entry.id === view);
  return { view: known ? known.id : 'feed' };
}

export function href(view: ViewId, id?: string): string {
  return id === undefined ? `#/${view}` : `#/${view}/${encodeURIComponent(id)}`;
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const update = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', update);
    return () => removeEventListener('hashchange', update);
  }, []);
  return route;
}
