import type { ContextItem } from '@ctxbus/core/contract';
import type { InboxOutcome } from './inbox-socket.js';
import type { DeliveredLog } from './live-files.js';
import type { LiveSession } from './live-push.js';
import { liveMessage, shouldPush } from './live-push.js';

// The live push's loop: follow the hub's stream of blocking changes and deliver each item the
// session should get, once. The hub, the inbox and the disk are ports, so the loop is tested
// with the real hub and a socket, and the process (live-main.ts) only wires them.

/** A change on the hub's stream (the clients' StreamEvent). */
export interface LiveEvent {
  seq: number;
  event: string;
  item: ContextItem;
}

export interface LiveFollowerOptions {
  self: LiveSession;
  /** The hub's stream of changes after `since` (none: from now), until `signal` aborts. */
  events: (since: number | undefined, signal: AbortSignal) => AsyncIterable<LiveEvent>;
  /** Writes one message into the session's inbox. */
  deliver: (text: string) => Promise<InboxOutcome>;
  /** What was delivered before (this process or an earlier one for the session). */
  delivered: DeliveredLog;
  /** Records a delivery durably; returns the log to use from now on. */
  remember: (delivered: DeliveredLog, item: ContextItem) => DeliveredLog;
  /** The newest sequence the session has already seen (its SessionStart bundle), if known. */
  since?: number;
  signal: AbortSignal;
  log: (line: string) => void;
}

/** Why the loop ended: the signal (the session ended), or the inbox is gone. */
export type LiveEnd = 'stopped' | 'inbox-gone';

/** The sequence to follow from: what the session saw, or the newest delivery if later. */
export function followFrom(since: number | undefined, delivered: DeliveredLog): number | undefined {
  const newest = Math.max(since ?? 0, ...delivered.seqs);
  return newest > 0 ? newest : undefined;
}

/** Follows the stream until the signal aborts or the inbox is gone; never pushes twice. */
export async function followLive(options: LiveFollowerOptions): Promise<LiveEnd> {
  const { self, signal, log } = options;
  let delivered = options.delivered;
  const since = followFrom(options.since, delivered);
  for await (const change of options.events(since, signal)) {
    if (signal.aborted) break;
    const { item } = change;
    if (change.event !== 'context-added' || !shouldPush(item, self)) continue;
    if (delivered.seqs.includes(item.seq) || delivered.ids.includes(item.id)) continue;
    const outcome = await options.deliver(liveMessage(item, self));
    if (outcome === 'gone') {
      log(`inbox gone at seq ${item.seq}: the session ended`);
      return 'inbox-gone';
    }
    if (outcome === 'failed') {
      log(
        `could not deliver seq ${item.seq} (${item.source.runtime}); it waits for the next prompt`,
      );
      continue;
    }
    delivered = options.remember(delivered, item);
    log(`delivered seq ${item.seq} from ${item.source.runtime}: ${item.title.slice(0, 80)}`);
  }
  return 'stopped';
}
