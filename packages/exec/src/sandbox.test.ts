import { randomUUID } from 'node:crypto';
import {
  closeSync,
  constants,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCommand } from './run-command.js';
import { detectSandbox, hubPathHolding, SANDBOX_TMP_BYTES, sandboxArgv } from './sandbox.js';
import { NODE, tempDir, waitUntil } from './test-support.js';

// Real bubblewrap runs. Where bwrap does not work the tests skip, saying why, unless
// CTXBUS_REQUIRE_BWRAP=1 (CI), where they fail instead.

const required = process.env.CTXBUS_REQUIRE_BWRAP === '1';
const status = await detectSandbox();
const skip = !status.available && !required;
const because = status.available ? '' : ` (skipped: ${status.reason})`;
const sandboxIt = skip ? it.skip : it;
const bwrapPath = status.available ? status.bwrapPath : 'bwrap';

async function sandboxed(
  argv: string[],
  workdir: string,
  layout: { network?: boolean; hidePaths?: string[]; hubPaths?: string[]; tmpBytes?: number } = {},
  timeoutMs = 120_000,
) {
  return runCommand({
    argv: sandboxArgv({ bwrapPath, workdir, ...layout }, argv),
    cwd: workdir,
    env: { PATH: '/usr/bin:/bin' },
    timeoutMs,
    inactivityMs: 20_000,
    maxOutputBytes: 64 * 1024,
    killGraceMs: 300,
  });
}

async function plain(argv: string[], workdir: string) {
  return runCommand({
    argv,
    cwd: workdir,
    env: { PATH: '/usr/bin:/bin' },
    timeoutMs: 120_000,
    inactivityMs: 20_000,
    maxOutputBytes: 64 * 1024,
  });
}

const connectScript = (target: number | string) =>
  `require('net').connect(${typeof target === 'number' ? `${target}, '127.0.0.1'` : JSON.stringify(target)})` +
  `.on('connect', () => { console.log('connected'); process.exit(0); })` +
  `.on('error', (e) => { console.log('error ' + e.code); process.exit(2); })`;

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe(`sandbox (bubblewrap)${because}`, () => {
  let server: Server;
  let port = 0;
  let hostOnly = '';
  beforeAll(async () => {
    server = createServer((socket) => socket.end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
    // Outside /tmp (which the sandbox replaces), so that the sandbox sees it read-only.
    hostOnly = mkdtempSync('/var/tmp/ctxbus-exec-');
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    rmSync(hostOnly, { recursive: true, force: true });
  });

  sandboxIt(
    `bwrap works on this machine${required ? ' (required: CTXBUS_REQUIRE_BWRAP=1)' : ''}`,
    () => {
      expect(status).toMatchObject({ available: true });
    },
  );

  sandboxIt(
    "keeps the kernel's settings (/proc/sys) read-only, even to a root worker's command",
    async () => {
      const workdir = tempDir();
      // Writing core_pattern's own value back: harmless if it were taken.
      const result = await sandboxed(
        [
          'sh',
          '-c',
          'cat /proc/sys/kernel/core_pattern > /tmp/value && cat /tmp/value > /proc/sys/kernel/core_pattern',
        ],
        workdir,
      );
      expect(result.exitCode).not.toBe(0);
      // Root is refused by the read-only mount; another user already by the file's mode.
      expect(result.stderr).toMatch(
        process.getuid?.() === 0
          ? /Read-only file system/
          : /Read-only file system|Permission denied/,
      );
    },
  );

  sandboxIt(
    'binds the directory it opened, never the one its path names by then (swapped after the check)',
    async () => {
      const base = mkdtempSync('/var/tmp/ctxbus-pin-');
      try {
        const workdir = join(base, 'work');
        const elsewhere = join(base, 'elsewhere');
        mkdirSync(workdir);
        mkdirSync(elsewhere);
        writeFileSync(join(workdir, 'marker'), 'the checked directory');
        writeFileSync(join(elsewhere, 'marker'), 'somewhere else');
        const fd = openSync(workdir, constants.O_RDONLY | constants.O_DIRECTORY);
        const run = (workdirFd?: number) =>
          runCommand({
            argv: sandboxArgv(
              { bwrapPath, workdir, ...(workdirFd !== undefined && { workdirFd }) },
              ['sh', '-c', 'cat marker; echo; echo written > new-file'],
            ),
            cwd: base,
            env: { PATH: '/usr/bin:/bin' },
            timeoutMs: 60_000,
            inactivityMs: 20_000,
            maxOutputBytes: 4_096,
            ...(workdirFd !== undefined && { passFds: [fd] }),
          });
        try {
          // After the check, the directory is moved away and another put at its path.
          renameSync(workdir, join(base, 'moved'));
          renameSync(elsewhere, workdir);
          const pinned = await run(3);
          expect(pinned.exitCode, pinned.stderr).toBe(0);
          expect(pinned.stdout).toBe('the checked directory\n');
          // The command itself holds no descriptor of it: through one (fchdir, then ..), the
          // host's file system would be open to it, written and dialled past every bind.
          const held = await runCommand({
            argv: sandboxArgv({ bwrapPath, workdir, workdirFd: 3 }, [
              'sh',
              '-c',
              'ls /proc/$$/fd; cat /proc/self/fd/3/../moved/marker',
            ]),
            cwd: base,
            env: { PATH: '/usr/bin:/bin' },
            timeoutMs: 60_000,
            inactivityMs: 20_000,
            maxOutputBytes: 4_096,
            passFds: [fd],
          });
          expect(held.stdout.split('\n').filter(Boolean)).not.toContain('3');
          expect(held.stdout).not.toContain('the checked directory');
          expect(readFileSync(join(base, 'moved', 'new-file'), 'utf8')).toBe('written\n');
          expect(existsSync(join(workdir, 'new-file'))).toBe(false);
          // By path, bwrap binds the other directory, writable.
          const byPath = await run();
          expect(byPath.stdout).toBe('somewhere else\n');
          // A symlink at the path: bwrap follows none at a destination, and runs nothing.
          rmSync(workdir, { recursive: true });
          symlinkSync(join(base, 'moved'), workdir);
          const linked = await run(3);
          expect(linked.exitCode).not.toBe(0);
          expect(linked.stdout).toBe('');
        } finally {
          closeSync(fd);
        }
      } finally {
        rmSync(base, { recursive: true, force: true });
      }
    },
  );

  sandboxIt(
    "a working directory that holds the hub's files (a command run in the home) does not uncover them",
    async () => {
      // Outside /tmp, as a home is: the layout hides it, and the hub's config directory in it.
      const home = mkdtempSync('/var/tmp/ctxbus-home-');
      try {
        const config = join(home, '.config', 'ctxbus');
        mkdirSync(config, { recursive: true });
        writeFileSync(join(config, 'credentials.json'), '{"adminToken":"cbx_secret"}');
        const layout = { hidePaths: [home], hubPaths: [config] };
        const read = await sandboxed(['cat', '.config/ctxbus/credentials.json'], home, layout);
        expect(read.exitCode).not.toBe(0);
        expect(read.stdout).not.toContain('cbx_secret');
        const written = await sandboxed(
          [NODE, '-e', "require('fs').writeFileSync('.config/ctxbus/planted', 'x')"],
          home,
          layout,
        );
        expect(written.exitCode).toBe(0); // into the empty tmpfs over the directory, not the host
        expect(existsSync(join(config, 'planted'))).toBe(false);
        // The rest of the working directory is the command's, as always.
        writeFileSync(join(home, 'notes.txt'), 'visible');
        expect((await sandboxed(['cat', 'notes.txt'], home, layout)).stdout).toBe('visible');
      } finally {
        rmSync(home, { recursive: true, force: true });
      }
    },
  );

  sandboxIt(
    'writing inside the workdir works; outside it fails and nothing appears on the host',
    async () => {
      const workdir = tempDir();
      const inside = await sandboxed(
        [NODE, '-e', "require('fs').writeFileSync('inside.txt', 'ok')"],
        workdir,
      );
      expect(inside.exitCode).toBe(0);
      expect(readFileSync(join(workdir, 'inside.txt'), 'utf8')).toBe('ok');

      const target = join(hostOnly, `probe-${randomUUID()}`);
      const write = (path: string) => [
        NODE,
        '-e',
        `require('fs').writeFileSync(${JSON.stringify(path)}, 'x')`,
      ];
      const outside = await sandboxed(write(target), workdir);
      expect(outside.exitCode).not.toBe(0);
      expect(outside.stderr).toMatch(/EROFS|read-only/);
      expect(existsSync(target)).toBe(false);
      // The same write without the sandbox works: the refusal is the sandbox's.
      expect((await plain(write(target), workdir)).exitCode).toBe(0);
      expect(existsSync(target)).toBe(true);

      const system = `/etc/ctxbus-sandbox-probe-${randomUUID()}`;
      expect((await sandboxed(write(system), workdir)).exitCode).not.toBe(0);
      expect(existsSync(system)).toBe(false);

      // /tmp is private: what a command writes there is gone, never on the host's /tmp.
      const tmpFile = `/tmp/ctxbus-sandbox-probe-${randomUUID()}`;
      expect((await sandboxed(write(tmpFile), workdir)).exitCode).toBe(0);
      expect(existsSync(tmpFile)).toBe(false);
    },
  );

  sandboxIt(
    'its /tmp (512 MiB by default), the hidden home and /dev/shm are sized: a write past them fails with ENOSPC; the rest of /dev is read-only',
    async () => {
      const workdir = tempDir();
      const kib = (
        await sandboxed(['sh', '-c', "df -k /tmp | tail -1 | awk '{print $2}'"], workdir)
      ).stdout;
      expect(Number(kib.trim())).toBe(SANDBOX_TMP_BYTES / 1024);
      // Outside /tmp, as a home is: the layout hides it behind its own sized tmpfs.
      const home = mkdtempSync('/var/tmp/ctxbus-home-');
      const fill = (path: string, mib: number) => [
        'sh',
        '-c',
        `dd if=/dev/zero of=${path} bs=1M count=${mib} 2>&1 && echo wrote`,
      ];
      const small = { hidePaths: [home], tmpBytes: 8 * 1024 * 1024 };
      try {
        for (const dir of ['/tmp', home, '/dev/shm']) {
          const fits = await sandboxed(fill(`${dir}/fits`, 4), workdir, small);
          expect(fits.stdout).toContain('wrote');
          const past = await sandboxed(fill(`${dir}/past`, 16), workdir, small);
          expect(past.exitCode).not.toBe(0);
          expect(past.stdout).toMatch(/No space left on device/);
        }
        expect(readdirSync(home)).toEqual([]);
        // bwrap's own /dev is a tmpfs too: read-only but for its device nodes.
        const dev = await sandboxed(
          ['sh', '-c', 'echo x > /dev/null && echo null-ok; echo x > /dev/planted'],
          workdir,
        );
        expect(dev.stdout).toContain('null-ok');
        expect(dev.stderr).toMatch(/Read-only file system/);
      } finally {
        rmSync(home, { recursive: true, force: true });
      }
    },
  );

  sandboxIt(
    'network is off: 127.0.0.1 (a local server, and PostgreSQL on 5432 when it runs) is unreachable inside, reachable outside',
    async () => {
      const workdir = tempDir();
      const ports = [port];
      if (await canConnect(5432)) ports.push(5432);
      for (const target of ports) {
        const outside = await plain([NODE, '-e', connectScript(target)], workdir);
        expect(outside.stdout.trim(), `outside, port ${target}`).toBe('connected');
        const inside = await sandboxed([NODE, '-e', connectScript(target)], workdir);
        expect(inside.exitCode, `inside, port ${target}`).toBe(2);
        expect(inside.stdout).toMatch(/^error E[A-Z]+/);
      }
    },
  );

  const pgSocket = '/run/postgresql/.s.PGSQL.5432';
  (existsSync(pgSocket) ? sandboxIt : it.skip)(
    `network is off: the Unix sockets under /run (PostgreSQL's) are hidden${existsSync(pgSocket) ? '' : ` (skipped: no ${pgSocket} here)`}`,
    async () => {
      const workdir = tempDir();
      const dial = [NODE, '-e', connectScript(pgSocket)];
      expect((await plain(dial, workdir)).stdout.trim()).toBe('connected');
      const inside = await sandboxed(dial, workdir);
      expect(inside.exitCode).toBe(2);
      expect(inside.stdout).toMatch(/^error ENOENT/);
    },
  );

  sandboxIt("network is on when the layout allows it (the capability's limits)", async () => {
    const inside = await sandboxed([NODE, '-e', connectScript(port)], tempDir(), { network: true });
    expect(inside.stdout.trim()).toBe('connected');
  });

  sandboxIt('hidden directories (the home directory by default) read as empty', async () => {
    const secretDir = tempDir();
    writeFileSync(join(secretDir, 'secret'), 'key');
    const read = [
      NODE,
      '-e',
      `console.log(require('fs').readdirSync(${JSON.stringify(secretDir)}).length)`,
    ];
    expect((await plain(read, tempDir())).stdout.trim()).toBe('1');
    expect((await sandboxed(read, tempDir(), { hidePaths: [secretDir] })).stdout.trim()).toBe('0');
  });

  sandboxIt(
    "a program in ~/.local/bin brings its own directory, not ~/.local: the hub's data and signing key stay hidden",
    async () => {
      const home = tempDir();
      const bin = join(home, '.local', 'bin');
      const data = join(home, '.local', 'share', 'ctxbus');
      mkdirSync(bin, { recursive: true });
      mkdirSync(data, { recursive: true });
      writeFileSync(join(data, 'approval-key.pem'), 'PRIVATE KEY');
      writeFileSync(join(bin, 'peek'), '#!/bin/sh\ncat "$1" 2>/dev/null || echo hidden\n', {
        mode: 0o755,
      });
      const argv = [join(bin, 'peek'), join(data, 'approval-key.pem')];
      expect((await plain(argv, tempDir())).stdout.trim()).toBe('PRIVATE KEY');
      const inside = await sandboxed(argv, tempDir(), { hidePaths: [home] });
      expect(inside.stdout.trim()).toBe('hidden');
    },
  );

  sandboxIt('a timeout ends everything in the sandbox, grandchildren included', async () => {
    const marker = `ctxbus-sandbox-marker-${randomUUID()}`;
    const grandchild = `/* ${marker} */ process.on('SIGTERM', () => {}); setInterval(() => {}, 1000)`;
    const script = [
      "const { spawn } = require('node:child_process');",
      `spawn(process.execPath, ['-e', ${JSON.stringify(grandchild)}], { stdio: 'ignore' });`,
      "process.on('SIGTERM', () => {});",
      "console.log('started');",
      'setInterval(() => {}, 1000);',
    ].join('\n');
    const running = () =>
      readdirSync('/proc')
        .filter((name) => /^\d+$/.test(name))
        .some((pid) => {
          try {
            const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
            if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) return false;
            return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker);
          } catch {
            return false;
          }
        });
    const result = await sandboxed([NODE, '-e', script], tempDir(), {}, 1_500);
    expect(result.stdout).toContain('started');
    expect(result.timedOut).toBe('hard');
    await waitUntil(() => !running(), `the sandboxed grandchild ${marker} to be gone`);
  });
});

describe('detectSandbox fails closed', () => {
  it('a bwrap that is not there is unavailable, with the reason', async () => {
    expect(await detectSandbox({ bwrapPath: '/nonexistent/bwrap' })).toEqual({
      available: false,
      reason: expect.stringContaining('/nonexistent/bwrap is missing'),
    });
    expect(await detectSandbox({ searchPath: '/nonexistent:/also-not-there' })).toEqual({
      available: false,
      reason: expect.stringContaining('not installed'),
    });
  });

  it('a bwrap with no --size is available with unsized private directories, and says so', async () => {
    const fake = join(tempDir(), 'bwrap');
    const script = [
      '#!/bin/sh',
      'case "$*" in',
      '  --help) echo "usage: bwrap [OPTIONS...] [--] COMMAND"; echo "    --tmpfs DEST  Mount new tmpfs on DEST"; exit 0;;',
      '  *--size*) echo "bwrap: Unknown option --size" >&2; exit 1;;',
      'esac',
      'exit 0',
    ];
    writeFileSync(fake, `${script.join('\n')}\n`, { mode: 0o755 });
    const detected = await detectSandbox({ bwrapPath: fake });
    expect(detected).toEqual({ available: true, bwrapPath: fake, sizedTmpfs: false });
    const argv = sandboxArgv({ bwrapPath: fake, workdir: tempDir(), sizedTmpfs: false }, ['true']);
    expect(argv).not.toContain('--size');
    expect(argv.join(' ')).toContain('--tmpfs /tmp');
    const sized = sandboxArgv({ bwrapPath: fake, workdir: tempDir() }, ['true']).join(' ');
    expect(sized).toContain(`--size ${SANDBOX_TMP_BYTES} --tmpfs /tmp`);
  });

  it('a bwrap whose trial run fails is unavailable, with the reason', async () => {
    const fake = join(tempDir(), 'bwrap');
    writeFileSync(
      fake,
      '#!/bin/sh\necho "bwrap: No permissions to create new namespace" >&2\nexit 1\n',
      {
        mode: 0o755,
      },
    );
    expect(await detectSandbox({ bwrapPath: fake })).toEqual({
      available: false,
      reason: expect.stringContaining('No permissions to create new namespace'),
    });
  });
});

describe('hubPathHolding', () => {
  it("names the hub's file that holds a directory, and nothing for one beside it", () => {
    const root = tempDir();
    const config = join(root, '.config', 'ctxbus');
    mkdirSync(join(config, 'keys'), { recursive: true });
    expect(hubPathHolding(config, [config])).toBe(config);
    expect(hubPathHolding(join(config, 'keys'), [config])).toBe(config);
    expect(hubPathHolding(root, [config])).toBeNull();
    expect(hubPathHolding(join(root, '.config'), [config])).toBeNull();
  });
});
