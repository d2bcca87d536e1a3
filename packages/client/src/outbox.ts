import {
  appendFileSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { join } from 'node:path';
import type { ContextItemInput } from '@ctxbus/core/contract';
import { MAX_BATCH_ITEMS } from '@ctxbus/core/light';

// A hook's outbox (`@ctxbus/client/outbox`): writes that could not reach the hub wait here, one
// JSON item per line, and go out with the next successful contact. Every queued item has a
// deterministic id, so sending one twice (two hooks flushing at once, a crash after the hub
// stored it) stores it once.

const PENDING = 'outbox.jsonl';

/** Where items the hub refused for good are kept (never sent again), and how big it may grow. */
export const REJECTED = 'outbox-rejected.jsonl';
const MAX_REJECTED_BYTES = 1_000_000;

/**
 * Whether the hub read the write and refused it for good (a 4xx no retry changes: an item too
 * big, a bad field): not an unreachable hub, a refused token (401, 403: fixed, the queue goes
 * out) or a rate limit.
 */
export function refusedForGood(error: unknown): boolean {
  // A CtxbusError's status follows its code; the light client's HubRequestError carries the
  // hub's (null when there was no answer).
  const status = (error as { status?: unknown } | null)?.status;
  if (typeof status !== 'number') return false;
  return status >= 400 && status < 500 && ![401, 403, 408, 429].includes(status);
}

/** Keeps refused items beside the outbox, with why, while the file is under its bound. */
function setAside(stateDir: string, items: readonly ContextItemInput[], error: unknown): void {
  const path = join(stateDir, REJECTED);
  let size = 0;
  try {
    size = statSync(path).size;
  } catch {
    // none yet
  }
  if (size >= MAX_REJECTED_BYTES) return;
  const why = {
    status: (error as { status?: unknown }).status,
    message: error instanceof Error ? error.message : String(error),
    at: new Date().toISOString(),
  };
  appendFileSync(
    path,
    items.map((item) => `${JSON.stringify({ item, refused: why })}\n`).join(''),
    { mode: 0o600 },
  );
}

/**
 * Sends `items`; what the hub refuses for good is set aside (outbox-rejected.jsonl) instead of
 * blocking every later write behind it: a refused batch is sent again item by item, and only
 * the items refused alone are set aside. Returns how many were. Any other failure throws.
 */
export async function sendOrSetAside(
  stateDir: string,
  items: ContextItemInput[],
  send: (items: ContextItemInput[]) => Promise<void>,
): Promise<number> {
  try {
    await send(items);
    return 0;
  } catch (error) {
    if (!refusedForGood(error)) throw error;
    if (items.length === 1) {
      setAside(stateDir, items, error);
      return 1;
    }
    let refused = 0;
    for (const item of items) refused += await sendOrSetAside(stateDir, [item], send);
    return refused;
  }
}

export function queueItems(stateDir: string, items: readonly ContextItemInput[]): void {
  if (items.length === 0) return;
  mkdirSync(stateDir, { recursive: true });
  appendFileSync(
    join(stateDir, PENDING),
    items.map((item) => `${JSON.stringify(item)}\n`).join(''),
    {
      mode: 0o600,
    },
  );
}

/**
 * Sends everything queued. The queue is claimed by renaming it (appends after that start a new
 * queue); a claimed batch is deleted once the hub took it or refused it for good (those items
 * set aside: sendOrSetAside), and otherwise stays to be sent by a later flush. Returns how many
 * items were sent or set aside.
 */
export async function flushOutbox(
  stateDir: string,
  send: (items: ContextItemInput[]) => Promise<void>,
): Promise<number> {
  let claimed: string[];
  try {
    renameSync(
      join(stateDir, PENDING),
      join(stateDir, `outbox-${process.pid}-${Date.now()}.sending`),
    );
  } catch {
    // nothing pending, or another hook claimed it first
  }
  try {
    claimed = readdirSync(stateDir).filter((name) => name.endsWith('.sending'));
  } catch {
    return 0;
  }
  let sent = 0;
  for (const name of claimed.sort()) {
    const path = join(stateDir, name);
    let items: ContextItemInput[];
    try {
      items = readFileSync(path, 'utf8')
        .split('\n')
        .filter((line) => line.trim() !== '')
        .flatMap((line) => {
          try {
            return [JSON.parse(line) as ContextItemInput];
          } catch {
            return []; // a torn last line from a crash: skip it, keep the rest
          }
        });
    } catch {
      continue; // another flush took it
    }
    for (let start = 0; start < items.length; start += MAX_BATCH_ITEMS)
      await sendOrSetAside(stateDir, items.slice(start, start + MAX_BATCH_ITEMS), send);
    rmSync(path, { force: true });
    sent += items.length;
  }
  return sent;
}

/** How many items wait in the outbox (for tests and status output). */
export function pendingCount(stateDir: string): number {
  try {
    return readdirSync(stateDir)
      .filter((name) => name === PENDING || name.endsWith('.sending'))
      .reduce(
        (count, name) =>
          count + readFileSync(join(stateDir, name), 'utf8').split('\n').filter(Boolean).length,
        0,
      );
  } catch {
    return 0;
  }
}
