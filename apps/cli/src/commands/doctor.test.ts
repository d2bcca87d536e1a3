import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunningHub } from '@ctxbus/hub';
import { startHub } from '@ctxbus/hub';
import { openSqliteStore } from '@ctxbus/store';
import { damagedSqliteFile } from '@ctxbus/store/testing';
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
  await damagedSqliteFile(path);
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
