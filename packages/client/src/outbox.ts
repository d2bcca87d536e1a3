import { appendFileSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { ContextItemInput } from '@ctxbus/core/contract';
import { MAX_BATCH_ITEMS } from '@ctxbus/core/light';

// A hook's outbox (`@ctxbus/client/outbox`): writes that could not reach the hub wait here, one
// JSON item per line, and go out with the next successful contact. Every queued item has a
// deterministic id, so sending one twice (two hooks flushing at once, a crash after the hub
// stored it) stores it once.

const PENDING = 'outbox.jsonl';

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
 * queue); a claimed batch is deleted only once the hub accepted it, and otherwise stays to be
 * sent by a later flush. Returns how many items were sent.
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
      await send(items.slice(start, start + MAX_BATCH_ITEMS));
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
