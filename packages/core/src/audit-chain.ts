import { z } from 'zod';
import { canonicalJson, sha256Hex } from './canonical-hash.js';

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
  'execution.started',
  'execution.finished',
  'execution.refused',
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
 * Checks a team's records, in sequence order from the first: numbering without gaps, each
 * `prevHash` equal to the previous record's hash, each hash recomputed from the content.
 * Reports the first record that does not hold.
 */
export function verifyAuditChain(records: readonly AuditRecord[]): AuditVerification {
  let prevHash = AUDIT_GENESIS;
  let expectedSeq = 1;
  for (const record of records) {
    const fail = (reason: string): AuditVerification => ({
      ok: false,
      records: records.length,
      seq: record.seq,
      reason,
    });
    if (record.seq !== expectedSeq) {
      return fail(`expected record ${expectedSeq}, found ${record.seq}: a record is missing`);
    }
    if (record.prevHash !== prevHash) {
      return fail('its previous-hash link does not match the record before it');
    }
    if (record.hash !== auditHash(prevHash, record)) {
      return fail('its content does not match its hash: it was changed after it was written');
    }
    prevHash = record.hash;
    expectedSeq += 1;
  }
  return { ok: true, records: records.length, head: prevHash };
}
