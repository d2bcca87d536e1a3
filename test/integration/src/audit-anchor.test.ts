import { createPrivateKey, createPublicKey } from 'node:crypto';
import {
  existsSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { AuditRecord } from '@ctxbus/core';
import { chainAuditRecord } from '@ctxbus/core';
import type { HubFixture, TestHub } from '@ctxbus/test-kit';
import { call, removeDir, runCli, runtimeToken, tempDir, waitUntil } from '@ctxbus/test-kit';
import { sql, storeUrl, withPostgres } from '@ctxbus/test-kit/postgres';
import { describe, expect, it } from 'vitest';
import { startInProcessServe, useInProcessHub } from './in-process-serve.ts';

// The audit chain anchored outside the database (hardening 5): whoever can write the database
// can cut a chain's tail, rewrite a record and every hash after it, or drop a team's log, and
// the chain alone still verifies. The hub's signed checkpoints (beside its key, in a directory
// of keys outside the data tree: hardening 4) catch each, on SQLite and on PostgreSQL.

type Row = Record<string, string | number>;

const NO_TASK = 'task_00000000-0000-4000-8000-000000000000';

/** The hub's database, changed behind its back: `?` placeholders, `{t}` for a table's name. */
interface Tamper {
  all(text: string, values?: unknown[]): Promise<Row[]>;
  run(text: string, values?: unknown[]): Promise<void>;
}

const TOKENS = {
  acme: ['acme', 'openclaw'],
  globex: ['globex', 'openclaw'],
  initech: ['initech', 'openclaw'],
  umbrella: ['umbrella', 'openclaw'],
} as const;

/** The one directory of keys the hub made under its config directory. */
function keyDir(configDir: string): string {
  const keys = join(configDir, 'keys');
  const [only, ...more] = readdirSync(keys);
  expect(more).toEqual([]);
  return join(keys, only as string);
}

/**
 * A team's checkpoint file: `audit-anchors/<team>.jsonl` beside the key (SQLite), under the
 * store's own directory there on PostgreSQL (`audit-anchors/<database>-<schema>-<hash>/`).
 */
function anchorFile(configDir: string, team: string): string {
  const anchors = join(keyDir(configDir), 'audit-anchors');
  const direct = join(anchors, `${team}.jsonl`);
  if (existsSync(direct)) return direct;
  const stores = readdirSync(anchors).filter((name) => !name.endsWith('.jsonl'));
  expect(stores).toHaveLength(1);
  return join(anchors, stores[0] as string, `${team}.jsonl`);
}

function sqliteTamper(dataDir: () => string): Tamper {
  const open = () => {
    const db = new DatabaseSync(join(dataDir(), 'ctxbus.db'));
    db.exec('PRAGMA busy_timeout = 60000');
    return db;
  };
  const table = (text: string) => text.replace(/\{(\w+)\}/g, '$1');
  return {
    async all(text, values = []) {
      const db = open();
      try {
        return db.prepare(table(text)).all(...(values as string[])) as Row[];
      } finally {
        db.close();
      }
    },
    async run(text, values = []) {
      const db = open();
      try {
        db.prepare(table(text)).run(...(values as string[]));
      } finally {
        db.close();
      }
    },
  };
}

function postgresTamper(url: string, schema: string): Tamper {
  const prepare = (text: string) => {
    let index = 0;
    return text.replace(/\{(\w+)\}/g, `"${schema}".$1`).replace(/\?/g, () => `$${++index}`);
  };
  return {
    all: (text, values = []) => sql<Row>(url, prepare(text), values),
    async run(text, values = []) {
      await sql(url, prepare(text), values);
    },
  };
}

function anchorSuite(
  store: string,
  hub: HubFixture<keyof typeof TOKENS, TestHub>,
  configDir: string,
  db: Tamper,
): void {
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

  async function rowsOf(team: string): Promise<AuditRecord[]> {
    const rows = await db.all('SELECT * FROM {audit_log} WHERE team_id = ? ORDER BY seq', [team]);
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

  describe(`the audit chain anchored outside the database (${store})`, () => {
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
      // Beside the key, in a directory of keys only (0700, the key 0600), not in the data tree.
      const keys = keyDir(configDir);
      expect(readdirSync(keys).sort()).toEqual(['approval-key.pem', 'audit-anchors']);
      expect(statSync(keys).mode & 0o777).toBe(0o700);
      expect(statSync(join(keys, 'approval-key.pem')).mode & 0o777).toBe(0o600);
      expect(existsSync(anchorFile(configDir, 'acme'))).toBe(true);
      if (hub.dataDir) expect(readdirSync(hub.dataDir)).not.toContain('approval-key.pem');
      const cli = await runCli(['audit', 'verify', '--url', hub.url, '--token', hub.tokens.acme]);
      expect(cli.code, cli.stderr).toBe(0);
      expect(cli.stdout).toMatch(/anchored: the hub signed record 5 at \S+ \(\d+ s ago\)/);
    });

    it('finds a tail cut with the head moved back, which the chain alone calls intact', async () => {
      const third = (await rowsOf('acme'))[2] as AuditRecord;
      await db.run("DELETE FROM {audit_log} WHERE team_id = 'acme' AND seq > 3");
      await db.run("UPDATE {audit_heads} SET seq = 3, hash = ? WHERE team_id = 'acme'", [
        third.hash,
      ]);
      const outcome = await verify(hub.tokens.acme);
      // The first checkpoint past the cut (one signed at 4 or 5, as the records fell in seconds).
      expect(outcome).toMatchObject({ ok: false, records: 3, seq: expect.any(Number) });
      expect([4, 5]).toContain(outcome.seq);
      expect(outcome.reason).toMatch(
        /record [45] is gone, though the hub signed a checkpoint of it/,
      );
    });

    it('finds a record rewritten with every later hash recomputed', async () => {
      const rows = await rowsOf('globex');
      let head: AuditRecord = rows[0] as AuditRecord;
      for (const row of rows.slice(1)) {
        const { prevHash: _, hash: __, ...content } = row;
        const data =
          row.seq === 2 ? { ...content.data, message: 'nothing happened' } : content.data;
        const rewritten = chainAuditRecord(head, { ...content, data });
        await db.run(
          "UPDATE {audit_log} SET data = ?, prev_hash = ?, hash = ? WHERE team_id = 'globex' AND seq = ?",
          [JSON.stringify(rewritten.data), rewritten.prevHash, rewritten.hash, row.seq],
        );
        head = rewritten;
      }
      await db.run("UPDATE {audit_heads} SET hash = ? WHERE team_id = 'globex'", [head.hash]);
      const outcome = await verify(hub.tokens.globex);
      // The first checkpoint of a rewritten record (from record 2 on).
      expect(outcome).toMatchObject({ ok: false, records: 5 });
      expect([2, 3, 4, 5]).toContain(outcome.seq);
      expect(outcome.reason).toMatch(
        /record [2-5] is not the one the hub signed .*: the chain was rewritten/,
      );
    });

    it('finds a chain rolled back (a backup restored) and written past its old checkpoints', async () => {
      await refusedApprovals(hub.tokens.umbrella, 3);
      expect(await verify(hub.tokens.umbrella)).toMatchObject({
        ok: true,
        anchor: { checkpoint: { seq: 3 } },
      });
      // Back to record 1, as a restored copy of the database would be; then written on to 5.
      const first = (await rowsOf('umbrella'))[0] as AuditRecord;
      await db.run("DELETE FROM {audit_log} WHERE team_id = 'umbrella' AND seq > 1");
      await db.run("UPDATE {audit_heads} SET seq = 1, hash = ? WHERE team_id = 'umbrella'", [
        first.hash,
      ]);
      await refusedApprovals(hub.tokens.umbrella, 4);
      const outcome = await verify(hub.tokens.umbrella);
      // The latest checkpoint (record 5) holds; the one of the record the rollback replaced does not.
      expect(outcome).toMatchObject({ ok: false, records: 5, anchor: { checkpoint: { seq: 5 } } });
      expect(outcome.reason).toMatch(/record [23] is not the one the hub signed/);
    });

    it("finds a team's whole log dropped", async () => {
      await db.run("DELETE FROM {audit_log} WHERE team_id = 'initech'");
      await db.run("DELETE FROM {audit_heads} WHERE team_id = 'initech'");
      const outcome = await verify(hub.tokens.initech);
      // Its first checkpoint (records 1 to 3 were signed in one or more).
      expect(outcome).toMatchObject({ ok: false, records: 0 });
      expect([1, 2, 3]).toContain(outcome.seq);
      expect(outcome.reason).toMatch(/record [123] is gone/);
    });

    it('counts checkpoint lines whose signature fails (an edited file)', async () => {
      const file = anchorFile(configDir, 'globex');
      const lines = readFileSync(file, 'utf8').trim().split('\n');
      const forged = JSON.parse(lines.at(-1) as string);
      forged.checkpoint.seq = 99;
      writeFileSync(file, `${lines.join('\n')}\n${JSON.stringify(forged)}\n`);
      const outcome = await verify(hub.tokens.globex);
      expect(outcome.anchor).toMatchObject({ checkpoint: { seq: 5 }, unsigned: 1 });
    });
  });
}

{
  const configDir = tempDir('ctxbus-anchor-config-');
  const hub = useInProcessHub({ tokens: TOKENS, env: { CTXBUS_CONFIG_DIR: configDir } });
  anchorSuite(
    'SQLite',
    hub,
    configDir,
    sqliteTamper(() => hub.dataDir),
  );
}

await withPostgres('the audit anchor on PostgreSQL', (url, schemas) => {
  const schema = schemas.next('anchor');
  const configDir = tempDir('ctxbus-anchor-config-');
  const hub = useInProcessHub({
    store: storeUrl(url, schema),
    tokens: TOKENS,
    env: { CTXBUS_CONFIG_DIR: configDir },
  });
  anchorSuite('PostgreSQL', hub, configDir, postgresTamper(url, schema));

  describe('two PostgreSQL stores anchored from one config directory', () => {
    const otherConfig = tempDir('ctxbus-anchor-config-');
    const env = { CTXBUS_CONFIG_DIR: otherConfig };
    const first = useInProcessHub({ store: storeUrl(url, schemas.next('anchorone')), env });
    const second = useInProcessHub({ store: storeUrl(url, schemas.next('anchortwo')), env });

    it("each keep their own checkpoints: one store's longer chain is not the other's", async () => {
      const refuse = async (hub: TestHub, count: number) => {
        const token = await runtimeToken(hub, 'acme', 'openclaw');
        for (let index = 0; index < count; index++) {
          const refused = await call(hub.url, 'POST', `/api/tasks/${NO_TASK}/approve`, {
            token,
            body: {},
          });
          expect(refused.status).toBe(403);
        }
        return token;
      };
      const longer = await refuse(first, 4);
      const shorter = await refuse(second, 1);
      for (const [hub, token, records] of [
        [first, longer, 4],
        [second, shorter, 1],
      ] as const) {
        const outcome = await call(hub.url, 'GET', '/api/audit/verify', { token });
        expect(outcome.body).toMatchObject({
          ok: true,
          records,
          anchor: { checkpoint: { seq: records } },
        });
      }
    });
  });
});

describe('the approval key of an older hub, kept in its data directory', () => {
  it('moves to the directory of keys with its anchors: approvals and checkpoints still verify', async () => {
    const configDir = tempDir('ctxbus-anchor-config-');
    const dataDir = tempDir('ctxbus-anchor-data-');
    const env = { CTXBUS_CONFIG_DIR: configDir };
    const publicKey = async (hub: { url: string; adminToken: string | null }, token: string) =>
      (await call(hub.url, 'GET', '/api/approvals/key', { token })).body.publicKey as string;
    try {
      const first = await startInProcessServe({ dataDir, env });
      const admin = first.adminToken as string;
      const before = await publicKey(first, admin);
      const agent = await runtimeToken(first, 'acme', 'openclaw');
      const refused = await call(first.url, 'POST', `/api/tasks/${NO_TASK}/approve`, {
        token: agent,
        body: {},
      });
      expect(refused.status).toBe(403);
      await waitUntil(
        () => existsSync(join(keyDir(configDir), 'audit-anchors', 'acme.jsonl')),
        "acme's first signed checkpoint",
      );
      expect(await first.stop()).toBe(0);
      // The layout of an older hub: the key and the anchors beside the database.
      const keys = keyDir(configDir);
      renameSync(join(keys, 'approval-key.pem'), join(dataDir, 'approval-key.pem'));
      renameSync(join(keys, 'audit-anchors'), join(dataDir, 'audit-anchors'));
      rmSync(join(configDir, 'keys'), { recursive: true });

      const second = await startInProcessServe({ dataDir, env });
      try {
        expect(await publicKey(second, admin)).toBe(before);
        expect(readdirSync(dataDir)).not.toContain('approval-key.pem');
        expect(readdirSync(dataDir)).not.toContain('audit-anchors');
        expect(statSync(join(keyDir(configDir), 'approval-key.pem')).mode & 0o777).toBe(0o600);
        expect(second.stderr()).toMatch(/approval key: moved \S+approval-key\.pem to /);
        const verified = await call(second.url, 'GET', '/api/audit/verify', { token: agent });
        expect(verified.body).toMatchObject({ ok: true, anchor: { checkpoint: { seq: 1 } } });
      } finally {
        expect(await second.stop()).toBe(0);
      }

      // An old key that turns up again beside a moved one is left alone, and the moved one used.
      writeFileSync(
        join(dataDir, 'approval-key.pem'),
        readFileSync(join(keyDir(configDir), 'approval-key.pem')),
      );
      const third = await startInProcessServe({ dataDir, env });
      try {
        expect(await publicKey(third, admin)).toBe(before);
        expect(third.stderr()).toMatch(/approval-key\.pem was left in place: \S+ exists already/);
      } finally {
        expect(await third.stop()).toBe(0);
      }
    } finally {
      removeDir(dataDir);
      removeDir(configDir);
    }
  });

  it('--approval-key names another file: the key is made there and the anchors go beside it', async () => {
    const configDir = tempDir('ctxbus-anchor-config-');
    const elsewhere = tempDir('ctxbus-anchor-key-');
    const file = join(elsewhere, 'hub.pem');
    const hub = await startInProcessServe({
      args: ['--approval-key', file],
      env: { CTXBUS_CONFIG_DIR: configDir },
    });
    try {
      const agent = await runtimeToken(hub, 'acme', 'openclaw');
      const refused = await call(hub.url, 'POST', `/api/tasks/${NO_TASK}/approve`, {
        token: agent,
        body: {},
      });
      expect(refused.status).toBe(403);
      await waitUntil(
        () => existsSync(join(elsewhere, 'audit-anchors', 'acme.jsonl')),
        "acme's first signed checkpoint beside the named key",
      );
      const served = await call(hub.url, 'GET', '/api/approvals/key', { token: agent });
      const own = createPublicKey(createPrivateKey(readFileSync(file, 'utf8')));
      expect(served.body.publicKey).toBe(own.export({ type: 'spki', format: 'pem' }));
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(existsSync(join(configDir, 'keys'))).toBe(false);
    } finally {
      expect(await hub.stop()).toBe(0);
      removeDir(hub.dataDir);
      removeDir(configDir);
      removeDir(elsewhere);
    }
  });
});
