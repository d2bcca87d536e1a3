import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';

// What an approval is bound to is hashed as it is read, within a byte budget. Reading whole
// files made a task naming /proc/self/pagemap (a "regular file" of size 0 that reads hundreds
// of GB) fill the worker's memory before anyone approved anything, and a file over 2 GiB
// (which Node will not read whole) fell out of the hash unseen: it could be swapped after the
// approval. Past the budget, nothing is bound: the command is refused instead.

/** The most bytes one script (or a package.json) may hold for an approval to be bound to it. */
export const MAX_SCRIPT_BYTES = 64 * 1024 * 1024;

/** The most bytes one working tree's hash reads, over all its files. */
export const MAX_TREE_BYTES = 1024 * 1024 * 1024;

/** What is left of a budget of bytes to read (shared by the files of one hash). */
export interface ReadBudget {
  left: number;
  /** Said in the refusal: what the budget is for. */
  readonly what: string;
}

/** A command whose files are too large to bind an approval to. */
export class HashBudgetExceeded extends Error {
  constructor(path: string, budget: ReadBudget, limit: number) {
    super(
      `${path} takes ${budget.what} past ${limit} bytes: too large to bind an approval to (a person cannot review it, and hashing it would take the worker's memory and time)`,
    );
    this.name = 'HashBudgetExceeded';
  }
}

const CHUNK = 1024 * 1024;

/**
 * SHA-256 of `path`'s bytes, read in chunks against `budget`. Opened non-blocking (a device
 * or /proc file that would wait fails instead of hanging the worker); `noFollow`: a symlink
 * is refused (the tree hashes links by their target text).
 */
export async function boundedFileHash(
  path: string,
  budget: ReadBudget,
  limit: number,
  noFollow = false,
): Promise<string> {
  const flags = constants.O_RDONLY | constants.O_NONBLOCK | (noFollow ? constants.O_NOFOLLOW : 0);
  const handle = await open(path, flags);
  try {
    const hash = createHash('sha256');
    const buffer = Buffer.allocUnsafe(CHUNK);
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, CHUNK, null);
      if (bytesRead === 0) return hash.digest('hex');
      budget.left -= bytesRead;
      if (budget.left < 0) throw new HashBudgetExceeded(path, budget, limit);
      hash.update(buffer.subarray(0, bytesRead));
    }
  } finally {
    await handle.close();
  }
}
