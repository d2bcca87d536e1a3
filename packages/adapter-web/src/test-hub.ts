// Shared by this package's tests (not part of the build): a real hub in process (the test
// kit's) on a SQLite file that can restart on the same port, which cuts every open stream the
// way a dropped network does.
import { mintToken, startHub } from '@ctxbus/hub';
import type { Store } from '@ctxbus/store';
import { REPO_CAPABILITIES, startInProcessHub } from '@ctxbus/test-kit/in-process-hub';

/** The repository's capabilities.yaml (web asks, claude-code runs code). */
export { REPO_CAPABILITIES } from '@ctxbus/test-kit/in-process-hub';

export interface TestHub {
  readonly url: string;
  readonly store: Store;
  /** A runtime token of team acme for `web`. */
  token: string;
  mint(runtime: string, teamId?: string): Promise<string>;
  /** Stops the hub (ending every connection) and starts it again on the same port and file. */
  restart(between?: () => Promise<void>): Promise<void>;
  close(): Promise<void>;
}

export async function startTestHub(): Promise<TestHub> {
  const hub = await startInProcessHub(
    { startHub, mintToken },
    {
      tokens: { web: ['acme', 'web'] },
      hub: { capabilities: { file: REPO_CAPABILITIES, pollMs: 0 } },
    },
  );
  return {
    url: hub.url,
    get store() {
      return hub.store;
    },
    token: hub.tokens.web,
    mint: async (runtime, teamId) => (await hub.mint(runtime, teamId)).token,
    restart: (between) => hub.restart(between),
    close: () => hub.close(),
  };
}

/**
 * A `fetch` whose stream responses the test controls: `cut()` errors the body of every open
 * stream (a dropped connection), `hold()` keeps new stream requests waiting until `release()`,
 * and `streamRequests` records each stream request's Last-Event-ID.
 */
export function controlledFetch() {
  const open = new Set<TransformStreamDefaultController<Uint8Array>>();
  const streamRequests: { lastEventId: string | null }[] = [];
  let gate: { promise: Promise<void>; release: () => void } | null = null;
  const wrapped: typeof fetch = async (input, init) => {
    const url = String(input instanceof Request ? input.url : input);
    if (!url.includes('/api/stream')) return fetch(input, init);
    streamRequests.push({ lastEventId: new Headers(init?.headers).get('last-event-id') });
    if (gate) await gate.promise;
    const response = await fetch(input, init);
    if (!response.body) return response;
    let held: TransformStreamDefaultController<Uint8Array> | undefined;
    const pass = new TransformStream<Uint8Array, Uint8Array>({
      start(controller) {
        held = controller;
        open.add(controller);
      },
      flush() {
        if (held) open.delete(held);
      },
    });
    return new Response(response.body.pipeThrough(pass), {
      status: response.status,
      headers: response.headers,
    });
  };
  return {
    fetch: wrapped,
    streamRequests,
    cut() {
      for (const controller of open) controller.error(new TypeError('network connection lost'));
      open.clear();
    },
    hold() {
      let release = () => {};
      const promise = new Promise<void>((resolve) => {
        release = resolve;
      });
      gate = { promise, release };
    },
    release() {
      gate?.release();
      gate = null;
    },
  };
}
