import { useEffect, useRef, useState } from 'preact/hooks';

/** The fastest a view asks the hub again while the bus changes. */
export const HUB_RELOAD_MS = 1_000;

/** How soon a load that failed on a hub it could not reach (or a 5xx) is tried again. */
export const HUB_RETRY_MS = 3_000;

/** Whether `error` may pass by itself (the hub unreachable or overloaded): worth a retry. */
function retryable(error: unknown): boolean {
  return Boolean(error && typeof error === 'object' && 'retryable' in error && error.retryable);
}

export interface HubData<T> {
  data: T | null;
  error: unknown;
  loading: boolean;
}

/**
 * Loads `load()` now and again whenever `deps` change (the bus version, say); a slower answer
 * never overwrites a newer one. `refreshMs` also reloads on a timer (for state the stream does
 * not carry, such as presence). A load that failed on a hub it could not reach is tried again
 * every HUB_RETRY_MS until it works (the error shows meanwhile).
 */
export function useHubData<T>(
  load: () => Promise<T>,
  deps: readonly unknown[],
  refreshMs?: number,
): HubData<T> & { reload: () => void } {
  const [state, setState] = useState<HubData<T>>({ data: null, error: null, loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let current = true;
    setState((previous) => ({ ...previous, loading: true }));
    load().then(
      (data) => current && setState({ data, error: null, loading: false }),
      (error) => current && setState((previous) => ({ ...previous, error, loading: false })),
    );
    return () => {
      current = false;
    };
  }, [...deps, tick]);
  useEffect(() => {
    if (!retryable(state.error)) return;
    const timer = setTimeout(() => setTick((value) => value + 1), HUB_RETRY_MS);
    return () => clearTimeout(timer);
  }, [state.error]);
  useEffect(() => {
    if (!refreshMs) return;
    const timer = setInterval(() => setTick((value) => value + 1), refreshMs);
    return () => clearInterval(timer);
  }, [refreshMs]);
  return { ...state, reload: () => setTick((value) => value + 1) };
}

/**
 * `value`, changed at most once per `ms` (the last change always shows, at the latest `ms`
 * later): views that reload from the hub on every bus change ask once a second at most, however
 * fast the bus moves.
 */
export function useThrottled<T>(value: T, ms: number): T {
  const [shown, setShown] = useState(value);
  const last = useRef(0);
  useEffect(() => {
    const show = () => {
      last.current = Date.now();
      setShown(value);
    };
    const wait = last.current + ms - Date.now();
    if (wait <= 0) {
      show();
      return;
    }
    const timer = setTimeout(show, wait);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return shown;
}
