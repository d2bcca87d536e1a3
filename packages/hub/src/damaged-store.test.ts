import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '@ctxbus/core';
import { openSqliteStore } from '@ctxbus/store';
import { damagedSqliteFile } from '@ctxbus/store/testing';
import { waitUntil } from '@ctxbus/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintToken } from './auth.js';
import type { RunningHub } from './start-hub.js';
import { startHub } from './start-hub.js';

// A hub on a damaged SQLite file says so: its background integrity check finds the damage
// before any request meets it, /health answers 503 naming the file, and so does every call
// that reads the damaged pages (instead of "internal error; see the hub log").

const dir = mkdtempSync(join(tmpdir(), 'ctxbus-damaged-hub-'));
const path = join(dir, 'ctxbus.db');
let hub: RunningHub;
let token: string;
let closeStore: () => Promise<void>;

beforeAll(async () => {
  await damagedSqliteFile(path, async (writer) => {
    token = (await mintToken(writer, { role: 'runtime', teamId: 'acme', runtime: 'web' })).token;
  });
  const store = openSqliteStore({ path });
  closeStore = () => store.close();
  hub = await startHub({ store, port: 0, logger: { ...silentLogger, warn: keep, error: keep } });
});

/** What the hub logged at warn and error. */
const logged: string[] = [];
function keep(_: object, message?: string): void {
  logged.push(message ?? '');
}

afterAll(async () => {
  await hub?.close();
  await closeStore?.();
  rmSync(dir, { recursive: true, force: true });
});

describe('a hub on a damaged SQLite file', () => {
  it('answers /health with 503 naming the file once its integrity check has run', async () => {
    let answer: { status: number; body: unknown } = { status: 0, body: null };
    await waitUntil(async () => {
      const response = await fetch(`${hub.url}/health`);
      answer = { status: response.status, body: await response.json() };
      return response.status !== 200;
    }, 'the integrity check to find the damage');
    expect(answer.status).toBe(503);
    expect(answer.body).toMatchObject({
      error: {
        code: 'unavailable',
        message: expect.stringMatching(
          /^the database file .*ctxbus\.db is damaged \(SQLite: [^\n]+$/,
        ),
        details: { reason: 'store_damaged' },
      },
    });
  });

  it('answers a read of the damaged pages with the same 503, not an internal error', async () => {
    const response = await fetch(`${hub.url}/api/context?limit=500`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({
      error: { code: 'unavailable', message: expect.stringContaining('restore it from a backup') },
    });
  });

  it('says the damage in its log once (the check), however many calls answer it', async () => {
    for (let call = 0; call < 3; call++) {
      expect((await fetch(`${hub.url}/health`)).status).toBe(503);
    }
    const damage = logged.filter((line) => line.includes('is damaged'));
    expect(damage).toHaveLength(1);
  });
});
