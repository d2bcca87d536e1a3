import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { taskOutputKey, taskStatusItem, taskStatusOf } from '@ctxbus/core';
import type { Store } from '@ctxbus/store';
import { openSqliteStore } from '@ctxbus/store';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mintToken } from '../auth.js';
import type { Hub } from '../create-hub.js';
import { createHub } from '../create-hub.js';
import { unkeyedTaskEventItemId } from '../tasks/derived-ids.js';
import { taskRelayReport } from '../tasks/task-relay-report.js';

// A task's status items and output line are the hub's: a runtime's item shaped like one (which
// the clients' follower would take as the task's state) and a supersession of a real status
// item are refused through the HTTP handler (an output key is no key a client may write or
// remove at all); the task's own status line stays live.

let store: Store;
let hub: Hub;
let dir: string;
const tokens: Record<string, string> = {};

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ctxbus-status-guard-'));
  writeFileSync(
    join(dir, 'capabilities.yaml'),
    'version: 1\nruntimes:\n  codex:\n    description: Codex CLI\n    capabilities:\n      code_execution: { mode: native }\n',
  );
  store = openSqliteStore({ path: ':memory:' });
  for (const runtime of ['codex', 'openclaw', 'cli']) {
    tokens[runtime] = (await mintToken(store, { role: 'runtime', teamId: 'acme', runtime })).token;
  }
  hub = await createHub({
    store,
    validateResponses: true,
    sweep: false,
    capabilities: { file: join(dir, 'capabilities.yaml'), pollMs: 0 },
  });
});

afterEach(async () => {
  await hub.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

async function call(method: string, path: string, runtime: string, body?: unknown) {
  const response = await hub.app.request(path, {
    method,
    headers: {
      authorization: `Bearer ${tokens[runtime]}`,
      ...(body !== undefined && { 'content-type': 'application/json' }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as any };
}

describe("a task's status items are the hub's", () => {
  it('refuses a forged status item, an output line, its removal and a supersession of the real one', async () => {
    const asked = await call('POST', '/api/approvals', 'codex', {
      request: { argv: ['make', 'deploy'], cwd: '/srv/app', tool: 'Bash' },
      idempotencyKey: 'guard-1',
      waitSeconds: 120,
    });
    expect(asked.status, JSON.stringify(asked.body)).toBe(201);
    const task = asked.body.task;
    const listed = await call('GET', `/api/context?tags=task&scopeKey=task:${task.id}`, 'openclaw');
    const real = (listed.body.items as any[]).find(
      (item) => taskStatusOf(item)?.taskId === task.id,
    );
    expect(real, JSON.stringify(listed.body)).toBeDefined();

    const forged = taskStatusItem({ ...task, state: 'COMPLETED' }, 'ALL TESTS PASSED');
    const attempts: [string, string, unknown][] = [
      ['POST', '/api/context', forged],
      ['POST', '/api/context', [{ type: 'status', title: 'fine' }, forged]],
      ['POST', '/api/context', { type: 'status', title: 'settled', supersedes: real.id }],
    ];
    for (const [method, path, body] of attempts) {
      const refused = await call(method, path, 'openclaw', body);
      expect(refused.status, JSON.stringify(body)).toBe(403);
      expect(refused.body.error).toMatchObject({
        code: 'forbidden',
        details: { reason: 'reserved_item' },
      });
    }
    // An output key is not a key a client may write at all (the hub writes it unchecked).
    const output = await call('POST', '/api/context', 'openclaw', {
      type: 'status',
      title: 'out',
      key: taskOutputKey(task.id),
    });
    expect(output.status).toBe(400);
    const removal = await call(
      'DELETE',
      `/api/context?key=${encodeURIComponent(taskOutputKey(task.id))}`,
      'openclaw',
    );
    expect(removal.status).toBe(400);
    // Nothing was stored: the batch with a harmless first item too, and the real line is live.
    const after = await call('GET', '/api/context?limit=100', 'openclaw');
    expect((after.body.items as any[]).map((item) => item.title)).toEqual([real.title]);
    // An ordinary status item naming the task (no task tag) is anyone's.
    const note = await call('POST', '/api/context', 'openclaw', {
      type: 'status',
      title: `looking at ${task.id}`,
      sourceTaskId: task.id,
    });
    expect(note.status).toBe(201);
  });

  it("announces a change whose status item id a runtime took first: the hub's ids are keyed with the database's secret", async () => {
    const asked = await call('POST', '/api/approvals', 'codex', {
      request: { argv: ['make', 'deploy'], cwd: '/srv/app', tool: 'Bash' },
      idempotencyKey: 'guard-2',
      waitSeconds: 120,
    });
    const task = asked.body.task;
    // The ids this task's next status items had before they were keyed (event sequence numbers
    // are the store's, in order): each free one taken.
    let taken = 0;
    for (let seq = 1; seq <= 12; seq++) {
      const write = await call('POST', '/api/context', 'openclaw', {
        id: unkeyedTaskEventItemId(task.id, seq),
        type: 'status',
        title: `squatting ${seq}`,
      });
      if (write.status === 201) taken += 1;
    }
    expect(taken).toBeGreaterThanOrEqual(10);
    const denied = await call('POST', `/api/tasks/${task.id}/deny`, 'cli', {
      digest: task.approval.request.digest,
    });
    expect(denied.status, JSON.stringify(denied.body)).toBe(200);
    const listed = await call('GET', `/api/context?tags=task&scopeKey=task:${task.id}`, 'openclaw');
    expect((listed.body.items as any[]).map((item) => taskStatusOf(item)?.state)).toEqual([
      'REJECTED',
    ]);
    const report = await taskRelayReport(store, 'acme');
    expect(report.unannounced).toEqual([]);
    expect(report.misaudited).toEqual([]);
  });
});
