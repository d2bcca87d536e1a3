import { createPublicKey, sign, verify } from 'node:crypto';
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { AuditRecord, Logger } from '@ctxbus/core';
import { canonicalJson } from '@ctxbus/core';
import type { ApprovalKey } from './approval-key.js';

// The audit chain anchored outside the database. Whoever can write the database can rewrite
// a hash chain from any record on (recomputing every later hash), cut its tail, or drop a team's
// whole log, and the chain still verifies. So the hub signs each team's head with its Ed25519
// key (the approval key) and appends the signed checkpoint to a file of its own, beside the
// key, outside the database: `<dir>/<team>.jsonl`, one line per checkpoint, fsynced.
// `audit verify` then checks the chain against every checkpoint whose signature holds: the
// record at each one's sequence must exist with its hash, so any rewrite, cut or drop of what a
// checkpoint covers is found, even after the hub wrote past it again. What came after the latest checkpoint (at most `intervalMs`
// while the hub runs) is covered by the chain alone.

/** What a checkpoint says: the team's chain had record `seq` with `hash`, at `at`. */
export interface AuditCheckpoint {
  v: 1;
  team: string;
  seq: number;
  hash: string;
  at: string;
}

/** The latest checkpoint of a team whose signature holds, and how many lines did not. */
export interface CheckpointReading {
  checkpoint: AuditCheckpoint | null;
  unsigned: number;
  /** Every checkpoint of the team whose signature holds, by sequence (oldest first). */
  all: AuditCheckpoint[];
}

export interface AuditAnchorOptions {
  /** The directory of the checkpoint files (made 0700 when missing). */
  dir: string;
  key: ApprovalKey;
  clock: () => Date;
  logger: Logger;
  /** Most time between a record and the checkpoint that covers it (default 1 s). */
  intervalMs?: number;
}

/** Signs checkpoints of the records the hub appends, and reads them back for verification. */
export class AuditAnchor {
  private readonly pending = new Map<string, { seq: number; hash: string }>();
  private readonly written = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private readonly intervalMs: number;

  constructor(private readonly options: AuditAnchorOptions) {
    this.intervalMs = options.intervalMs ?? 1_000;
    mkdirSync(options.dir, { recursive: true, mode: 0o700 });
  }

  /** Records the hub just appended: the team's newest is checkpointed within the interval. */
  observe(teamId: string, records: readonly AuditRecord[]): void {
    for (const record of records) {
      const known = this.pending.get(teamId)?.seq ?? this.written.get(teamId) ?? 0;
      if (record.seq > known) this.pending.set(teamId, { seq: record.seq, hash: record.hash });
    }
    if (this.pending.size > 0 && this.timer === null) {
      this.timer = setTimeout(() => this.flush(), this.intervalMs);
      this.timer.unref();
    }
  }

  /** Writes a signed checkpoint for each team with newer records (and on close). */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const [team, head] of [...this.pending]) {
      this.pending.delete(team);
      try {
        this.append({ v: 1, team, ...head, at: this.options.clock().toISOString() });
        this.written.set(team, head.seq);
      } catch (error) {
        // Not lost: the chain still holds it, and the next record's checkpoint covers it.
        this.options.logger.error(
          { err: error, team },
          `audit checkpoint not written: ${(error as Error).message}`,
        );
      }
    }
  }

  /** The checkpoints of `team` that this hub's key signed: the latest, and all of them. */
  read(team: string): CheckpointReading {
    let text: string;
    try {
      text = readFileSync(this.fileOf(team), 'utf8');
    } catch {
      return { checkpoint: null, unsigned: 0, all: [] };
    }
    const publicKey = createPublicKey(this.options.key.publicKeyPem);
    const all: AuditCheckpoint[] = [];
    let checkpoint: AuditCheckpoint | null = null;
    let unsigned = 0;
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue;
      const found = parseSigned(line, publicKey);
      if (found === null || found.team !== team) {
        unsigned += 1;
        continue;
      }
      all.push(found);
      if (checkpoint === null || found.seq >= checkpoint.seq) checkpoint = found;
    }
    // Stable: checkpoints of one sequence (a chain rolled back and written again) keep their order.
    all.sort((a, b) => a.seq - b.seq);
    return { checkpoint, unsigned, all };
  }

  close(): void {
    this.flush();
  }

  private fileOf(team: string): string {
    return join(this.options.dir, `${encodeURIComponent(team)}.jsonl`);
  }

  private append(checkpoint: AuditCheckpoint): void {
    const body = canonicalJson(checkpoint);
    const signature = sign(null, Buffer.from(body), this.options.key.privateKey).toString(
      'base64url',
    );
    const fd = openSync(this.fileOf(checkpoint.team), 'a', 0o600);
    try {
      writeSync(fd, `${JSON.stringify({ checkpoint, signature })}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  }
}

function parseSigned(
  line: string,
  publicKey: ReturnType<typeof createPublicKey>,
): AuditCheckpoint | null {
  try {
    const { checkpoint, signature } = JSON.parse(line) as {
      checkpoint: AuditCheckpoint;
      signature: string;
    };
    const body = Buffer.from(canonicalJson(checkpoint));
    if (!verify(null, body, publicKey, Buffer.from(signature, 'base64url'))) return null;
    if (checkpoint.v !== 1 || !Number.isInteger(checkpoint.seq)) return null;
    return checkpoint;
  } catch {
    return null;
  }
}

/**
 * The first of `checkpoints` (by sequence) the chain does not hold, and why (null: it holds
 * them all), reading the chain in pages with `page(afterSeq)` (empty at its end). Every signed
 * checkpoint counts, not only the latest: a chain rolled back (a restored backup) and written
 * past the old sequences again is caught by the checkpoints of the records it replaced.
 */
export async function firstCheckpointBreach(
  checkpoints: readonly AuditCheckpoint[],
  page: (afterSeq: number) => Promise<readonly Pick<AuditRecord, 'seq' | 'hash'>[]>,
): Promise<{ checkpoint: AuditCheckpoint; reason: string } | null> {
  let next = 0;
  let after = 0;
  while (next < checkpoints.length) {
    const records = await page(after);
    for (const record of records) {
      for (; next < checkpoints.length; next++) {
        const checkpoint = checkpoints[next] as AuditCheckpoint;
        if (checkpoint.seq > record.seq) break;
        const reason = checkpointBreach(checkpoint, checkpoint.seq === record.seq ? record : null);
        if (reason !== null) return { checkpoint, reason };
      }
      after = record.seq;
    }
    if (records.length === 0) break;
  }
  const left = checkpoints[next];
  return left ? { checkpoint: left, reason: checkpointBreach(left, null) as string } : null;
}

/**
 * Why the team's chain does not hold what its checkpoint says (null: it does): the record at
 * the checkpoint's sequence is missing (the tail was cut, or the log dropped) or has another
 * hash (rewritten from there or before).
 */
export function checkpointBreach(
  checkpoint: AuditCheckpoint,
  atSeq: Pick<AuditRecord, 'seq' | 'hash'> | null,
): string | null {
  if (atSeq === null || atSeq.seq !== checkpoint.seq) {
    return `record ${checkpoint.seq} is gone, though the hub signed a checkpoint of it at ${checkpoint.at}: records were removed`;
  }
  if (atSeq.hash !== checkpoint.hash) {
    return `record ${checkpoint.seq} is not the one the hub signed at ${checkpoint.at}: the chain was rewritten`;
  }
  return null;
}
