import type { CtxbusClient } from '@ctxbus/client';
import { followOpenClawLive } from './live-push.js';
import type { LiveState } from './live-state.js';
import { readLiveState, withSessionTurn, writeLiveState } from './live-state.js';
import type { OpenClawSystemRuntime, PluginLogger } from './openclaw-sdk.js';

// The live push as an OpenClaw plugin service: the gateway starts it (and stops it on a reload
// or shutdown); a CLI process that only loads the plugin (`openclaw agent --local`, `plugins
// inspect`) does not. It follows the hub's stream for as long as it runs, reconnecting after a
// drop; any failure is logged and leaves the gateway and its turns as they were.

export const LIVE_SERVICE_ID = 'ctxbus-live-push';
/** Logged each time the hub confirms the stream (the tests wait for it). */
export const LIVE_READY_LINE = "live on the hub's stream";

/** Records that a session had a turn, so the live push knows where to push (never throws). */
export function recordSessionTurn(
  stateDir: string,
  session: { sessionKey: string | undefined; agentId: string },
  now: Date,
): void {
  // An isolated heartbeat session (`<key>:heartbeat`) is the push's own turn, not a session.
  if (!session.sessionKey || session.sessionKey.endsWith(':heartbeat')) return;
  try {
    const state = readLiveState(stateDir);
    const { sessionKey, agentId } = session;
    writeLiveState(stateDir, withSessionTurn(state, { sessionKey, agentId }, now));
  } catch {
    // The push then misses this session until its next turn; the turn goes on.
  }
}

export interface LiveServiceOptions {
  client: CtxbusClient;
  system: OpenClawSystemRuntime;
  stateDir: string;
  logger: PluginLogger;
  now: () => Date;
}

function saver(stateDir: string, log: (line: string) => void) {
  return (state: LiveState) => {
    try {
      writeLiveState(stateDir, state);
    } catch (error) {
      log(`could not save the live push state: ${(error as Error).message}`);
    }
  };
}

/** The gateway service that runs the live push. */
export function livePushService(options: LiveServiceOptions) {
  const { client, system, stateDir, logger, now } = options;
  const log = (line: string) => logger.info(`ctxbus live push: ${line}`);
  let stop: AbortController | undefined;
  let running: Promise<void> | undefined;
  return {
    id: LIVE_SERVICE_ID,
    start() {
      stop = new AbortController();
      const signal = stop.signal;
      log(`following ${client.url}`);
      running = followOpenClawLive({
        events: (since, aborted) =>
          client.stream({
            minUrgency: 'blocking',
            ...(since !== undefined && { since }),
            signal: aborted,
            onReady: () => log(LIVE_READY_LINE),
            onReconnect: (error) => log(`reconnecting: ${(error as Error).message}`),
          }),
        system,
        load: () => readLiveState(stateDir),
        save: saver(stateDir, log),
        now,
        signal,
        log,
      }).catch((error: unknown) => {
        if (!signal.aborted) logger.warn(`ctxbus live push stopped: ${(error as Error).message}`);
      });
    },
    async stop() {
      stop?.abort();
      await running;
    },
  };
}
