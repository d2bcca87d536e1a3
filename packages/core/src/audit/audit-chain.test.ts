import { describe, expect, it } from 'vitest';
import {
  AUDIT_GENESIS,
  AuditChainVerifier,
  type AuditContent,
  type AuditRecord,
  chainAuditRecord,
  verifyAuditChain,
} from './audit-chain.js';

function content(seq: number, subject = `task_${seq}`): AuditContent {
  return {
    seq,
    teamId: 'acme',
    at: new Date(Date.UTC(2026, 10, 25, 0, 0, seq)).toISOString(),
    kind: 'task.routed',
    actor: 'hub',
    subject,
    data: { decision: 'proxy', runtime: 'claude-code', reasons: ['native'] },
  };
}

function chain(length: number): AuditRecord[] {
  const records: AuditRecord[] = [];
  for (let seq = 1; seq <= length; seq++) {
    records.push(chainAuditRecord(records.at(-1) ?? null, content(seq)));
  }
  return records;
}

describe('the audit hash chain', () => {
  it('starts from the genesis hash and verifies a chain as written', () => {
    const records = chain(5);
    expect(records[0]?.prevHash).toBe(AUDIT_GENESIS);
    expect(new Set(records.map((record) => record.hash)).size).toBe(5);
    expect(verifyAuditChain(records)).toEqual({
      ok: true,
      records: 5,
      head: records[4]?.hash,
    });
    expect(verifyAuditChain([])).toEqual({ ok: true, records: 0, head: AUDIT_GENESIS });
  });

  it('finds a record whose content was changed, even deep inside its data', () => {
    const records = chain(4);
    const changed = structuredClone(records);
    const third = changed[2] as AuditRecord;
    (third.data as { reasons: string[] }).reasons.push('approved');
    expect(verifyAuditChain(changed)).toMatchObject({ ok: false, seq: 3 });
    expect(verifyAuditChain(changed)).toMatchObject({ reason: expect.stringMatching(/changed/) });
  });

  it('finds a rewritten record even when its own hash was recomputed', () => {
    const records = chain(4);
    const forged = [...records];
    forged[1] = chainAuditRecord(records[0] ?? null, content(2, 'task_other'));
    expect(verifyAuditChain(forged)).toMatchObject({ ok: false, seq: 3 });
  });

  it('finds a removed or reordered record', () => {
    const records = chain(4);
    expect(verifyAuditChain(records.filter((record) => record.seq !== 2))).toMatchObject({
      ok: false,
      seq: 3,
      reason: expect.stringMatching(/missing/),
    });
    const swapped = [records[0], records[2], records[1], records[3]] as AuditRecord[];
    expect(verifyAuditChain(swapped)).toMatchObject({ ok: false, seq: 3 });
  });

  it('hashes key order independently (canonical JSON)', () => {
    const a = chainAuditRecord(null, { ...content(1), data: { x: 1, y: [1, { b: 2, a: 1 }] } });
    const b = chainAuditRecord(null, { ...content(1), data: { y: [1, { a: 1, b: 2 }], x: 1 } });
    expect(a.hash).toBe(b.hash);
  });

  it('verifies page by page as the whole chain does, and finds a chain cut short of its head', () => {
    const records = chain(10);
    const verifier = new AuditChainVerifier();
    for (const record of records) expect(verifier.add(record)).toBe(true);
    expect(verifier.lastSeq).toBe(10);
    expect(verifier.result(10)).toEqual(verifyAuditChain(records));
    expect(verifier.result(12)).toEqual({
      ok: false,
      records: 10,
      seq: 11,
      reason: expect.stringMatching(/ends at record 10 but its head is record 12/),
    });

    const broken = structuredClone(records);
    (broken[3] as AuditRecord).actor = 'someone else';
    const stops = new AuditChainVerifier();
    const accepted = broken.map((record) => stops.add(record));
    expect(accepted.indexOf(false)).toBe(3);
    expect(accepted.slice(4).every((ok) => !ok)).toBe(true);
    expect(stops.result(10)).toMatchObject({ ok: false, records: 4, seq: 4 });
  });
});
