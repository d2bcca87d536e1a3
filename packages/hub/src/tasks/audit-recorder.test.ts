import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { Logger } from '@ctxbus/core';
import type { Store } from '@ctxbus/store';
import { openSqliteStore } from '@ctxbus/store';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mintToken } from '../auth.js';
import type { Hub } from '../create-hub.js';
import { createHub } from '../create-hub.js';

// The hub's audit writer when the audit log cannot be written: the task change stands, the
// failure is logged at error level with the event, and the chain stays intact for what was
// written.

let dir: string;
let store: Store;
let hub: Hub;
const errors: { object: Record<string, unknown>; message: string | undefined }[] = [];
const logger: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: (object, message) => errors.push({ object: object as Record<string, unknown>, message }),
};

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ctxbus-audit-recorder-'));
  store = openSqliteStore({ path: join(dir, 'ctxbus.db') });
  hub = await createHub({ store, logger, sweep: false });
  errors.length = 0;
});

afterEach(async () => {
  await hub.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs SQL on the database file through a connection of its own (behind the store's back). */
function sql(text: string): void {
  const db = new DatabaseSync(join(dir, 'ctxbus.db'));
  try {
    db.exec(text);
  } finally {
    db.close();
  }
}

describe('the audit writer', () => {
  it('keeps the task change when the audit log cannot be written, and says so loudly', async () => {
    const { token } = await mintToken(store, {
      role: 'runtime',
      teamId: 'acme',
      runtime: 'openclaw',
    });
    const create = (title: string) =>
      hub.app.request('/api/tasks', {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ title, requiredCapabilities: ['search'] }),
      });

    expect((await create('first')).status).toBe(201);
    expect((await store.listAudit('acme', { limit: 10 })).map((r) => r.kind)).toEqual([
      'task.routed',
      'task.state',
    ]);
    expect(errors).toEqual([]);

    sql('ALTER TABLE audit_log RENAME TO audit_log_away');
    const response = await create('second');
    expect(response.status).toBe(201);
    const { task } = (await response.json()) as { task: { id: string } };
    expect((await store.getTask('acme', task.id))?.task.title).toBe('second');
    expect(errors.map((entry) => entry.message)).toEqual([
      'AUDIT LOG APPEND FAILED: this event is missing from the audit log',
      'AUDIT LOG APPEND FAILED: this event is missing from the audit log',
    ]);
    expect(errors[0]?.object).toMatchObject({
      teamId: 'acme',
      audit: { kind: 'task.routed', actor: 'openclaw', subject: task.id },
    });
    expect(hub.services.audit.failures).toBe(2);

    sql('ALTER TABLE audit_log_away RENAME TO audit_log');
    expect((await create('third')).status).toBe(201);
    expect(await store.verifyAudit('acme')).toMatchObject({ ok: true, records: 4 });
  });

  it('records approval steps for the approval flow, in the same chain', async () => {
    const task = { id: 'task_019a0000-0000-7000-8000-000000000001', teamId: 'acme' };
    await hub.services.audit.approval(task, 'requested', 'hub', { argv: ['make', 'deploy'] });
    const granted = await hub.services.audit.approval(task, 'granted', 'admin:alice');
    expect(granted).toMatchObject({ seq: 2, kind: 'approval.granted', actor: 'admin:alice' });
    expect((await store.listAudit('acme', { limit: 10 }))[0]).toMatchObject({
      kind: 'approval.requested',
      subject: task.id,
      data: { argv: ['make', 'deploy'] },
    });
    expect(await store.verifyAudit('acme')).toMatchObject({ ok: true, records: 2 });
  });
});
