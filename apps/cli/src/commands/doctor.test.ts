import { closeSync, mkdtempSync, openSync, rmSync, statSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { prepareItem } from '@ctxbus/core';
import type { RunningHub } from '@ctxbus/hub';
import { startHub } from '@ctxbus/hub';
import { openSqliteStore } from '@ctxbus/store';
import { waitUntil } from '@ctxbus/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDoctor } from './doctor.js';

// doctor against a hub whose database file is damaged: the hub's own answer (what happened and
// what to do) is the check's detail, not "start it".

const dir = mkdtempSync(join(tmpdir(), 'ctxbus-doctor-damaged-'));
const path = join(dir, 'ctxbus.db');
let hub: RunningHub;
let closeStore: () => Promise<void>;

beforeAll(async () => {
  const writer = openSqliteStore({ path });
  await writer.writeItems(
    Array.from({ length: 300 }, (_, index) =>
      prepareItem(
        { type: 'discovery', title: `item ${index}`, content: `${index} `.repeat(300) },
        { teamId: 'acme', runtime: 'web' },
        { now: new Date() },
      ),
    ),
  );
  await writer.close();
  const file = openSync(path, 'r+');
  writeSync(file, Buffer.alloc(40_960, 0xff), 0, 40_960, Math.floor(statSync(path).size / 2));
  closeSync(file);
  const store = openSqliteStore({ path });
  closeStore = () => store.close();
  hub = await startHub({ store, port: 0 });
  await waitUntil(
    async () => (await fetch(`${hub.url}/health`)).status === 503,
    'the integrity check to find the damage',
  );
});

afterAll(async () => {
  await hub?.close();
  await closeStore?.();
  rmSync(dir, { recursive: true, force: true });
});

describe('ctxbus doctor', () => {
  it("names a hub's damaged database with the hub's own advice, not 'start it'", async () => {
    const checks = await runDoctor({ url: hub.url, project: dir });
    const check = checks.find((entry) => entry.name === 'hub');
    expect(check).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(/^the database file .*ctxbus\.db is damaged .*restore it/),
    });
    expect(check?.fix).toBeUndefined();
  });
});
