import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { AuditRecord } from '@ctxbus/core';
import { chainAuditRecord } from '@ctxbus/core';
import { call, runCli, useHubProcess } from '@ctxbus/test-kit';
import { describe, expect, it } from 'vitest';

// The audit chain anchored outside the database (hardening 5): whoever can write the database
// can cut a chain's tail, rewrite a record and every hash after it, or drop a team's log, and
// the chain alone still verifies. The hub's signed checkpoints (beside its key) catch each.

const hub = useHubProcess({
  tokens: {
    acme: ['acme', 'openclaw'],
    globex: ['globex', 'openclaw'],
    initech: ['initech', 'openclaw'],
  },
});

/** An agent's approval (OpenClaw is no approver): refused, and audited as approval.refused. */
async function refusedApprovals(token: string, count: number): Promise<void> {
  for (let index = 0; index < count; index++) {
    const response = await call(
      hub.url,
      'POST',
      `/api/tasks/task_00000000-0000-4000-8000-00000000000${index}/approve`,
      {
        token,
        body: {},
      },
    );
    expect(response.status).toBe(403);
  }
}

async function verify(token: string) {
  const response = await call(hub.url, 'GET', '/api/audit/verify', { token });
  expect(response.status).toBe(200);
  return response.body;
}

/** The hub's SQLite file, changed behind its back. */
function tamper(change: (db: DatabaseSync) => void): void {
  const db = new DatabaseSync(join(hub.dataDir, 'ctxbus.db'));
  try {
    db.exec('PRAGMA busy_timeout = 60000');
    change(db);
  } finally {
    db.close();
  }
}

function rowsOf(db: DatabaseSync, team: string): AuditRecord[] {
  const rows = db
    .prepare('SELECT * FROM audit_log WHERE team_id = ? ORDER BY seq')
    .all(team) as Record<string, string | number>[];
  return rows.map((row) => ({
    seq: Number(row.seq),
    teamId: String(row.team_id),
    at: String(row.at),
    kind: String(row.kind) as AuditRecord['kind'],
    actor: String(row.actor),
    subject: String(row.subject),
    data: JSON.parse(String(row.data)),
    prevHash: String(row.prev_hash),
    hash: String(row.hash),
  }));
}

describe('the audit chain anchored outside the database', () => {
  it('signs checkpoints beside the key, and verify reports them', async () => {
    await refusedApprovals(hub.tokens.acme, 5);
    await refusedApprovals(hub.tokens.globex, 5);
    await refusedApprovals(hub.tokens.initech, 3);
    for (const [token, records] of [
      [hub.tokens.acme, 5],
      [hub.tokens.globex, 5],
      [hub.tokens.initech, 3],
    ] as const) {
      const outcome = await verify(token);
      expect(outcome).toMatchObject({
        ok: true,
        records,
        anchor: { checkpoint: { seq: records }, unsigned: 0 },
      });
      expect(outcome.anchor.checkpoint.hash).toBe(outcome.head);
    }
    expect(existsSync(join(hub.dataDir, 'audit-anchors', 'acme.jsonl'))).toBe(true);
    const cli = await runCli(['audit', 'verify', '--url', hub.url, '--token', hub.tokens.acme]);
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.stdout).toMatch(/anchored: the hub signed record 5 at \S+ \(\d+ s ago\)/);
  });

  it('finds a tail cut with the head moved back, which the chain alone calls intact', async () => {
    tamper((db) => {
      const third = rowsOf(db, 'acme')[2] as AuditRecord;
      db.prepare("DELETE FROM audit_log WHERE team_id = 'acme' AND seq > 3").run();
      db.prepare("UPDATE audit_heads SET seq = 3, hash = ? WHERE team_id = 'acme'").run(third.hash);
    });
    const outcome = await verify(hub.tokens.acme);
    expect(outcome).toMatchObject({ ok: false, records: 3, seq: 5 });
    expect(outcome.reason).toMatch(/record 5 is gone, though the hub signed a checkpoint of it/);
  });

  it('finds a record rewritten with every later hash recomputed', async () => {
    tamper((db) => {
      const rows = rowsOf(db, 'globex');
      let head: AuditRecord | null = rows[0] as AuditRecord;
      for (const row of rows.slice(1)) {
        const { prevHash: _, hash: __, ...content } = row;
        const data =
          row.seq === 2 ? { ...content.data, message: 'nothing happened' } : content.data;
        const rewritten = chainAuditRecord(head, { ...content, data });
        db.prepare(
          "UPDATE audit_log SET data = ?, prev_hash = ?, hash = ? WHERE team_id = 'globex' AND seq = ?",
        ).run(JSON.stringify(rewritten.data), rewritten.prevHash, rewritten.hash, row.seq);
        head = rewritten;
      }
      db.prepare("UPDATE audit_heads SET hash = ? WHERE team_id = 'globex'").run(head.hash);
    });
    const outcome = await verify(hub.tokens.globex);
    expect(outcome).toMatchObject({ ok: false, records: 5, seq: 5 });
    expect(outcome.reason).toMatch(
      /record 5 is not the one the hub signed .*: the chain was rewritten/,
    );
  });

  it("finds a team's whole log dropped", async () => {
    tamper((db) => {
      db.prepare("DELETE FROM audit_log WHERE team_id = 'initech'").run();
      db.prepare("DELETE FROM audit_heads WHERE team_id = 'initech'").run();
    });
    const outcome = await verify(hub.tokens.initech);
    expect(outcome).toMatchObject({ ok: false, records: 0, seq: 3 });
    expect(outcome.reason).toMatch(/record 3 is gone/);
  });

  it('counts checkpoint lines whose signature fails (an edited file)', async () => {
    const file = join(hub.dataDir, 'audit-anchors', 'globex.jsonl');
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    const forged = JSON.parse(lines.at(-1) as string);
    forged.checkpoint.seq = 99;
    writeFileSync(file, `${lines.join('\n')}\n${JSON.stringify(forged)}\n`);
    const outcome = await verify(hub.tokens.globex);
    expect(outcome.anchor).toMatchObject({ checkpoint: { seq: 5 }, unsigned: 1 });
  });
});
