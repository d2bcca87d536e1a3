import { z } from 'zod';
import { sha256Hex } from '../shared/canonical-hash.js';
import { canonicalJson } from '../shared/canonical-json.js';

// The audit log of routing decisions, approvals and executions is hash-chained per team: each
// record's hash covers its content and the previous record's hash, so changing, removing or
// reordering any record breaks every hash after it. Pure: the stores keep the records, the
// hub appends, `ctxbus audit verify` checks.

/** The `prevHash` of a team's first record. */
export const AUDIT_GENESIS = '0'.repeat(64);

export const AUDIT_KINDS = [
  'task.created',
  'task.routed',
  'task.state',
  'approval.requested',
  'approval.granted',
  'approval.denied',
  'approval.expired',
  'approval.refused',
  'execution.started',
  'execution.finished',
  'execution.refused',
  'task.report-refused',
  'context.removed',
  'conflict.resolved',
  'conflict.refused',
] as const;
export type AuditKind = (typeof AUDIT_KINDS)[number];

/** What the hub records; the store adds the sequence, time and hashes. */
export const auditEventSchema = z.strictObject({
  kind: z.enum(AUDIT_KINDS),
  /** Who did it: a runtime, a worker instance, a human's token label, or `hub`. */
  actor: z.string().min(1).max(200),
  /** What it is about, usually a task id. */
  subject: z.string().min(1).max(200),
  data: z.record(z.string(), z.unknown()).default({}),
});
export type AuditEvent = z.input<typeof auditEventSchema>;

export interface AuditRecord {
  /** Position in the team's chain, from 1. */
  seq: number;
  teamId: string;
  at: string;
  kind: AuditKind;
  actor: string;
  subject: string;
  data: Record<string, unknown>;
  prevHash: string;
  hash: string;
}

export type AuditContent = Omit<AuditRecord, 'hash' | 'prevHash'>;

/** The hash of a record: SHA-256 over the previous hash and the record's canonical JSON. */
export function auditHash(prevHash: string, content: AuditContent): string {
  const { seq, teamId, at, kind, actor, subject, data } = content;
  return sha256Hex(
    `${prevHash}\n${canonicalJson({ seq, teamId, at, kind, actor, subject, data })}`,
  );
}

/** Links a new record to the chain's head (`null`: the team's first record). */
export function chainAuditRecord(head: AuditRecord | null, content: AuditContent): AuditRecord {
  const prevHash = head?.hash ?? AUDIT_GENESIS;
  return { ...content, prevHash, hash: auditHash(prevHash, content) };
}

export type AuditVerification =
  | { ok: true; records: number; head: string }
  | { ok: false; records: number; seq: number; reason: string };

/**
 * Checks a team's records fed in sequence order from the first, one page at a time (memory
 * stays bounded however long the chain): numbering without gaps, each `prevHash` equal to the
 * previous record's hash, each hash recomputed from the content. Keeps the first record that
 * does not hold; records after it are not looked at.
 */
export class AuditChainVerifier {
  private prevHash = AUDIT_GENESIS;
  private expectedSeq = 1;
  private count = 0;
  private failure: { seq: number; reason: string } | null = null;

  /** Checks the next record; false once the chain is broken (there or before). */
  add(record: AuditRecord): boolean {
    if (this.failure !== null) return false;
    this.count += 1;
    const reason =
      record.seq !== this.expectedSeq
        ? `expected record ${this.expectedSeq}, found ${record.seq}: a record is missing`
        : record.prevHash !== this.prevHash
          ? 'its previous-hash link does not match the record before it'
          : record.hash !== auditHash(this.prevHash, record)
            ? 'its content does not match its hash: it was changed after it was written'
            : null;
    if (reason !== null) {
      this.failure = { seq: record.seq, reason };
      return false;
    }
    this.prevHash = record.hash;
    this.expectedSeq += 1;
    return true;
  }

  /** The sequence of the last record that held (0 before the first). */
  get lastSeq(): number {
    return this.expectedSeq - 1;
  }

  /**
   * The outcome so far. `headSeq`: the sequence the store's head says the chain reaches; a
   * chain that ends before it lost its newest records.
   */
  result(headSeq?: number): AuditVerification {
    if (this.failure !== null) return { ok: false, records: this.count, ...this.failure };
    if (headSeq !== undefined && headSeq > this.lastSeq) {
      return {
        ok: false,
        records: this.count,
        seq: this.lastSeq + 1,
        reason: `the chain ends at record ${this.lastSeq} but its head is record ${headSeq}: records were removed`,
      };
    }
    return { ok: true, records: this.count, head: this.prevHash };
  }
}

/** Checks a whole chain in memory (see AuditChainVerifier); reports the first bad record. */
export function verifyAuditChain(records: readonly AuditRecord[]): AuditVerification {
  const verifier = new AuditChainVerifier();
  for (const record of records) if (!verifier.add(record)) break;
  return verifier.result();
}
