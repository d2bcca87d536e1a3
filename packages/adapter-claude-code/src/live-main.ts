import { createClient } from '@ctxbus/client';
import { sendToInbox } from './inbox-socket.js';
import { appendLiveLog, readDelivered, rememberDelivered } from './live-files.js';
import { followLive } from './live-follower.js';
import { LIVE_CHECK_MS, livePushEnded } from './live-start.js';

// The live push process of one Claude Code session (`ctxbus-claude-live.js`), started detached
// by the SessionStart hook with the session in its environment: it follows the hub's stream of
// blocking changes and writes each item the session should get into the session's inbox
// socket. It checks every second that the session still runs and exits when it does not; it
// prints nothing (nobody reads its output) and logs one line per event beside the state.

/** The runtime the hooks write as (the token is claude-code's). */
const RUNTIME = 'claude-code';

function setting(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

async function main(): Promise<void> {
  const stateDir = setting('CTXBUS_STATE_DIR');
  const sessionId = setting('CTXBUS_LIVE_SESSION');
  const nonce = setting('CTXBUS_LIVE_NONCE');
  const socket = setting('CLAUDE_CODE_MESSAGING_SOCKET');
  const token = process.env.CLAUDE_CODE_MESSAGING_TOKEN;
  const since = Number(process.env.CTXBUS_LIVE_SINCE);
  const log = (line: string) => appendLiveLog(stateDir, sessionId, line);
  const client = createClient({ url: setting('CTXBUS_URL'), token: setting('CTXBUS_TOKEN') });
  const stop = new AbortController();
  const check = setInterval(() => {
    const why = livePushEnded({ stateDir, sessionId, nonce, socket });
    if (why) {
      log(`ending: ${why}`);
      stop.abort();
    }
  }, LIVE_CHECK_MS);
  log(`started (pid ${process.pid}) for inbox ${socket}`);
  try {
    const end = await followLive({
      self: { runtime: RUNTIME, sessionId },
      events: (from, signal) =>
        client.stream({
          minUrgency: 'blocking',
          ...(from !== undefined && { since: from }),
          signal,
        }),
      deliver: (text) => sendToInbox({ socket, sessionId, ...(token && { token }) }, text),
      delivered: readDelivered(stateDir, sessionId),
      remember: (delivered, item) => rememberDelivered(stateDir, sessionId, delivered, item),
      ...(Number.isInteger(since) && since > 0 && { since }),
      signal: stop.signal,
      log,
    });
    log(`ended: ${end}`);
  } catch (error) {
    log(`ended: ${(error as Error).message}`);
  } finally {
    clearInterval(check);
  }
}

main().finally(() => process.exit(0));
