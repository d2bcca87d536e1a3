import { liveText, shouldPush } from '@ctxbus/client';
import type { ContextItem } from '@ctxbus/core/contract';
import type { LiveSessionRecord, LiveState } from './live-state.js';
import { activeSessions, resumeFrom, withCursor, withDelivered } from './live-state.js';
import type { OpenClawSystemRuntime } from './openclaw-sdk.js';

// OpenClaw's live push (`ctxbus install openclaw --live`): a gateway service follows the hub's
// stream of blocking changes and, for each item the rule in @ctxbus/client says a session
// gets, queues one system event for that session and asks the gateway for a heartbeat. What
// OpenClaw 2026.9 does with it: an idle session gets a turn at once, the event among OpenClaw's
// own `System:` lines (which it frames as data, not instructions); a busy session reads it
// when its next turn's prompt is prepared (no plugin API reaches a running turn); the queue
// lives in the gateway's memory (20 events per session) and a gateway restart drops it.

/** The runtime the plugin writes as (the token is openclaw's). */
export const LIVE_RUNTIME = 'openclaw';
/** How every pushed system event starts. */
export const OPENCLAW_LIVE_HEADER = '[ctxbus live push]';
/** The heartbeat reason: a `hook:` wake targeted at a session runs even without a heartbeat schedule. */
export const LIVE_WAKE_REASON = 'hook:ctxbus-live-push';

/** A change on the hub's stream (the client's StreamEvent). */
export interface LiveEvent {
  seq: number;
  event: string;
  item: ContextItem;
}

export interface OpenClawLiveOptions {
  /** The hub's stream of blocking changes after `since` (none: from now), until `signal` aborts. */
  events: (since: number | undefined, signal: AbortSignal) => AsyncIterable<LiveEvent>;
  system: OpenClawSystemRuntime;
  /** Reads and replaces the state on disk (sessions, deliveries, cursor). */
  load: () => LiveState;
  save: (state: LiveState) => void;
  now: () => Date;
  signal: AbortSignal;
  log: (line: string) => void;
}

/** The system event text for an item: the header, then the item framed as data. */
export function liveEventText(item: ContextItem, sessionKey: string): string {
  return liveText(
    item,
    { runtime: LIVE_RUNTIME, sessionId: sessionKey },
    {
      header: OPENCLAW_LIVE_HEADER,
      readHint: 'the context_read tool',
    },
  );
}

/** Queues the item for one session and wakes it; false when OpenClaw refused the event. */
function pushTo(system: OpenClawSystemRuntime, session: LiveSessionRecord, item: ContextItem) {
  const queued = system.enqueueSystemEvent(liveEventText(item, session.sessionKey), {
    sessionKey: session.sessionKey,
    agentId: session.agentId,
    contextKey: `ctxbus:${item.id}`,
  });
  if (!queued) return false;
  system.requestHeartbeat({
    source: 'hook',
    intent: 'immediate',
    reason: LIVE_WAKE_REASON,
    agentId: session.agentId,
    sessionKey: session.sessionKey,
  });
  return true;
}

/**
 * Pushes one item to every active session that should get it and has not yet: returns the
 * state with the deliveries recorded. Never throws: a session OpenClaw refuses is logged, and
 * the item reaches it at its next turn through the usual team context.
 */
export function pushItem(
  state: LiveState,
  item: ContextItem,
  options: Pick<OpenClawLiveOptions, 'system' | 'now' | 'log'>,
): LiveState {
  let next = state;
  for (const session of activeSessions(state, options.now())) {
    const self = { runtime: LIVE_RUNTIME, sessionId: session.sessionKey };
    if (!shouldPush(item, self)) continue;
    if (next.delivered[session.sessionKey]?.includes(item.id)) continue;
    try {
      if (!pushTo(options.system, session, item)) {
        options.log(`OpenClaw did not queue seq ${item.seq} for ${session.sessionKey}`);
        continue;
      }
      next = withDelivered(next, session.sessionKey, item.id);
      options.log(`pushed seq ${item.seq} from ${item.source.runtime} to ${session.sessionKey}`);
    } catch (error) {
      options.log(
        `could not push seq ${item.seq} to ${session.sessionKey}: ${(error as Error).message}`,
      );
    }
  }
  return next;
}

/** Follows the stream until the signal aborts; each item is pushed once per session. */
export async function followOpenClawLive(options: OpenClawLiveOptions): Promise<void> {
  const since = resumeFrom(options.load(), options.now());
  for await (const change of options.events(since, options.signal)) {
    if (options.signal.aborted) break;
    let state = options.load();
    if (change.event === 'context-added') state = pushItem(state, change.item, options);
    options.save(withCursor(state, change.seq, options.now()));
  }
}
