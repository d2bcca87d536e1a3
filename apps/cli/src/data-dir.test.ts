import { spawn } from 'node:child_process';
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
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
  it('keeps the directory to its owner (0700), narrowing one others could read', () => {
    const made = join(fresh(), 'new', 'data');
    lockDataDir(made).release();
    expect(statSync(made).mode & 0o777).toBe(0o700);
    const open = fresh();
    chmodSync(open, 0o755);
    lockDataDir(open).release();
    expect(statSync(open).mode & 0o777).toBe(0o700);
  });

  it("names what is wrong with a directory it cannot use, not another hub's start", () => {
    const file = join(fresh(), 'a-file');
    writeFileSync(file, '');
    expect(() => lockDataDir(join(file, 'data'))).toThrow(
      expect.objectContaining({
        code: 'internal',
        message: expect.stringMatching(/^cannot use the data directory .*a-file\/data: .*ENOTDIR/),
      }),
    );
    const dir = fresh();
    mkdirSync(join(dir, 'hub.lock'));
    expect(() => lockDataDir(dir)).toThrow(/^cannot use the data directory /);
    // Where mkdir answers ENOENT under a parent that exists, Node's recursive mkdir loops
    // forever: one error here.
    if (process.platform === 'linux') {
      expect(() => lockDataDir('/proc/ctxbus-nope/data')).toThrow(
        /^cannot use the data directory \/proc\/ctxbus-nope\/data: .*ENOENT/,
      );
    }
  });

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

  it('lets one of two hubs started at the same moment take a directory, never both', async () => {
    const module = JSON.stringify(new URL('./data-dir.ts', import.meta.url).pathname);
    // Each process waits for the go on stdin (the instant to try), tries, says what it got, and
    // holds a moment.
    const script = `
      const { lockDataDir } = await import(${module});
      console.log('ready');
      process.stdin.once('data', async (go) => {
        // Both spin to the same instant: a start at the same moment.
        const at = Number(String(go));
        while (Date.now() < at) {}
        let lock = null;
        try { lock = lockDataDir(process.argv[1]); console.log('got'); }
        catch (error) { console.log(error.code === 'conflict' ? 'refused' : 'error ' + error.message); }
        await new Promise((resolve) => setTimeout(resolve, 1000));
        lock?.release();
        process.exit(0);
      });`;
    for (let round = 0; round < 12; round++) {
      const dir = fresh();
      const racers = [0, 1].map(() =>
        spawn(process.execPath, ['--input-type=module', '-e', script, dir], {
          stdio: ['pipe', 'pipe', 'inherit'],
        }),
      );
      const outputs = ['', ''];
      const ready = racers.map(
        (racer, index) =>
          new Promise<void>((resolve) => {
            racer.stdout.on('data', (chunk: Buffer) => {
              outputs[index] += chunk.toString();
              if (outputs[index]?.includes('ready\n')) resolve();
            });
          }),
      );
      const exited = racers.map(
        (racer) => new Promise<void>((resolve) => racer.once('exit', () => resolve())),
      );
      // Both loaded before either goes: a start at the same moment.
      await Promise.all(ready);
      const at = Date.now() + 100;
      for (const racer of racers) racer.stdin.end(`${at}\n`);
      await Promise.all(exited);
      const said = outputs.map((output) => output.replace('ready\n', '').trim());
      expect(said.sort()).toEqual(['got', 'refused']);
    }
  }, 60_000);
});
