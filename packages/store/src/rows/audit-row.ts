import type { AuditEvent, AuditKind, AuditRecord, AuditVerification } from '@ctxbus/core';
import { AuditChainVerifier, auditEventSchema, CtxbusError } from '@ctxbus/core';
import type { ListAuditOptions } from '../store.js';

// What both backends share for the audit log: the row shape, the event as it is hashed, and
// verification page by page.

/** An audit record as both backends store it (times and data as text, hashed as read). */
export interface AuditRow {
  team_id: string;
  seq: number | string;
  at: string;
  kind: string;
  actor: string;
  subject: string;
  data: string;
  prev_hash: string;
  hash: string;
}

export const AUDIT_COLUMNS = 'team_id, seq, at, kind, actor, subject, data, prev_hash, hash';

/** Records read per page while verifying. */
export const AUDIT_VERIFY_PAGE = 1_000;

/** Most records one list call returns. */
export const AUDIT_LIST_MAX = 1_000;

export function auditFromRow(row: AuditRow): AuditRecord {
  return {
    seq: Number(row.seq),
    teamId: row.team_id,
    at: row.at,
    kind: row.kind as AuditKind,
    actor: row.actor,
    subject: row.subject,
    // A row whose data is no longer JSON was changed: keep the text so its hash fails.
    data: parseData(row.data),
    prevHash: row.prev_hash,
    hash: row.hash,
  };
}

function parseData(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : { unparsable: text };
  } catch {
    return { unparsable: text };
  }
}

/**
 * The event as it will be stored and hashed: validated, with its data through JSON once, so the
 * hash written is the hash of what is read back (`undefined` dropped, `-0` as `0`, ...).
 */
export function normalizedAuditEvent(event: AuditEvent): {
  kind: AuditKind;
  actor: string;
  subject: string;
  data: Record<string, unknown>;
  dataText: string;
} {
  const parsed = auditEventSchema.safeParse(event);
  if (!parsed.success) {
    throw new CtxbusError('validation_failed', `not an audit event: ${parsed.error.message}`);
  }
  const dataText = JSON.stringify(parsed.data.data);
  return {
    kind: parsed.data.kind,
    actor: parsed.data.actor,
    subject: parsed.data.subject,
    data: JSON.parse(dataText) as Record<string, unknown>,
    dataText,
  };
}

export function checkAuditNow(now: string): string {
  const ms = Date.parse(now);
  if (Number.isNaN(ms)) throw new CtxbusError('validation_failed', `not a time: ${now}`);
  return new Date(ms).toISOString();
}

export function auditListBounds(options: ListAuditOptions): { afterSeq: number; limit: number } {
  const afterSeq = Math.max(0, Math.floor(options.afterSeq ?? 0));
  const limit = Math.min(AUDIT_LIST_MAX, Math.max(1, Math.floor(options.limit)));
  return { afterSeq, limit };
}

/**
 * Verifies a chain read page by page with `page(afterSeq, limit)` (sequence order), against the
 * head sequence the store keeps (0 when the team has none).
 */
export async function verifyAuditPages(
  page: (afterSeq: number, limit: number) => Promise<AuditRecord[]>,
  headSeq: number,
  pageSize = AUDIT_VERIFY_PAGE,
): Promise<AuditVerification> {
  const verifier = new AuditChainVerifier();
  let afterSeq = 0;
  for (;;) {
    const records = await page(afterSeq, pageSize);
    for (const record of records) {
      if (!verifier.add(record)) return verifier.result();
    }
    const last = records.at(-1);
    if (records.length < pageSize || last === undefined) break;
    afterSeq = last.seq;
  }
  return verifier.result(headSeq);
}

/** A task event the relay has passed without audit records (a hole in the log). */
export interface UnauditedTaskEvent {
  seq: number;
  task_id: string;
  to_state: string;
}

/**
 * An intact chain is still a failed verification when a task event the relay has passed has
 * no records: `seq` is where they were due (after the records there are).
 */
export function withTaskEventCoverage(
  chain: AuditVerification,
  missing: UnauditedTaskEvent | undefined,
): AuditVerification {
  if (!chain.ok || missing === undefined) return chain;
  return {
    ok: false,
    records: chain.records,
    seq: chain.records + 1,
    reason: `task event ${missing.seq} (task ${missing.task_id} to ${missing.to_state}) has no audit record: the log has a hole`,
  };
}
