import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { assertNoHub, defaultDataDir, lockDataDir, runningHub } from './data-dir.js';

const dirs: string[] = [];
const fresh = () => {
  const dir = mkdtempSync(join(tmpdir(), 'ctxbus-datadir-'));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('defaultDataDir', () => {
  it('prefers CTXBUS_DATA, then XDG_DATA_HOME, then ~/.local/share', () => {
    expect(defaultDataDir({ CTXBUS_DATA: '/srv/ctxbus' })).toBe('/srv/ctxbus');
    if (process.platform === 'linux') {
      expect(defaultDataDir({ XDG_DATA_HOME: '/xdg' })).toBe('/xdg/ctxbus');
      expect(defaultDataDir({})).toMatch(/\.local\/share\/ctxbus$/);
    }
  });
});

describe('the data directory lock', () => {
  it('is taken by one hub and released on exit', () => {
    const dir = fresh();
    const lock = lockDataDir(dir);
    lock.update({ url: 'http://127.0.0.1:1' });
    expect(JSON.parse(readFileSync(join(dir, 'hub.lock'), 'utf8'))).toMatchObject({
      pid: process.pid,
      url: 'http://127.0.0.1:1',
    });
    lock.release();
    expect(() => readFileSync(join(dir, 'hub.lock'))).toThrow();
  });

  it('refuses a directory a live process holds, and replaces a stale lock', async () => {
    const dir = fresh();
    const sleeper = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)']);
    try {
      writeFileSync(
        join(dir, 'hub.lock'),
        JSON.stringify({ pid: sleeper.pid, url: 'http://127.0.0.1:2' }),
      );
      expect(runningHub(dir)?.pid).toBe(sleeper.pid);
      expect(() => assertNoHub(dir)).toThrow(
        /a hub \(pid \d+, http:\/\/127\.0\.0\.1:2\) is serving/,
      );
      expect(() => lockDataDir(dir)).toThrow(/is serving/);
    } finally {
      sleeper.kill('SIGKILL');
      await new Promise((resolve) => sleeper.once('exit', resolve));
    }
    expect(runningHub(dir)).toBeNull();
    const lock = lockDataDir(dir);
    lock.release();
  });
});
