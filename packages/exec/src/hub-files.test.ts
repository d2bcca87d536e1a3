import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ExecutionPolicy } from './prepare-execution.js';
import { executePlan, prepareExecution } from './prepare-execution.js';
import { detectSandbox } from './sandbox.js';
import { NODE, tempDir } from './test-support.js';

// A sandboxed task cannot read the hub's files (hardening 4): its signing key, its database,
// the CLI's credentials, wherever the variables the CLI uses put them, even when the allowed
// program lives next to them (~/.local/bin beside ~/.local/share/ctxbus). Through the exec
// runner, with the real bubblewrap; each file is read outside the sandbox first (the control).

const required = process.env.CTXBUS_REQUIRE_BWRAP === '1';
const sandbox = await detectSandbox();
const sandboxIt = sandbox.available || required ? it : it.skip;
const because = sandbox.available ? '' : ` (skipped: ${sandbox.reason})`;

const VARIABLES = [
  'HOME',
  'XDG_CONFIG_HOME',
  'XDG_DATA_HOME',
  'CTXBUS_CONFIG_DIR',
  'CTXBUS_DATA',
  'CTXBUS_APPROVAL_KEY',
];
let saved: Record<string, string | undefined> = {};
beforeEach(() => {
  saved = Object.fromEntries(VARIABLES.map((name) => [name, process.env[name]]));
  for (const name of VARIABLES) delete process.env[name];
});
afterEach(() => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

/** A program that prints each file it is given, or `hidden` when it cannot read it. */
function peek(bin: string): void {
  mkdirSync(bin, { recursive: true });
  writeFileSync(
    join(bin, 'peek'),
    '#!/bin/sh\nfor f in "$@"; do echo "$f: $(cat "$f" 2>/dev/null || echo hidden)"; done\n',
    { mode: 0o755 },
  );
}

function write(file: string, content: string): string {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, content);
  return file;
}

/** Runs `peek files...` through prepareExecution and executePlan; its stdout. */
async function run(bin: string, files: string[], sandboxed: boolean): Promise<string> {
  const workdir = tempDir();
  const policy: ExecutionPolicy = {
    // `peek ...` is permission to run code (sandboxed only); the exact command runs outside.
    allow: ['peek ...', ['peek', ...files].join(' ')],
    roots: [workdir],
    trustedOrigin: true,
    childPath: `${bin}:${dirname(NODE)}:/usr/bin:/bin`,
    sourceEnv: {},
  };
  const prepared = await prepareExecution({
    request: { taskId: 'task-1', argv: ['peek', ...files], cwd: workdir, sandboxed },
    policy,
  });
  if (!prepared.ok) throw new Error(`refused: ${prepared.code}: ${prepared.reason}`);
  const executed = await executePlan(prepared.plan, {
    timeoutMs: 600_000,
    inactivityMs: 600_000,
    maxOutputBytes: 64 * 1024,
  });
  if (!executed.ok) throw new Error(`refused at spawn: ${executed.reason}`);
  expect(executed.result.exitCode, executed.result.stderr).toBe(0);
  return executed.result.stdout;
}

describe("a sandboxed task cannot read the hub's files", () => {
  sandboxIt(
    `the default places: the key under ~/.config/ctxbus/keys, the database under ~/.local/share/ctxbus, the program in ~/.local/bin${because}`,
    async () => {
      const home = tempDir('ctxbus-home-');
      process.env.HOME = home;
      const bin = join(home, '.local', 'bin');
      peek(bin);
      const files = [
        write(join(home, '.config/ctxbus/keys/sqlite-ctxbus-0123456789ab/approval-key.pem'), 'KEY'),
        write(join(home, '.local/share/ctxbus/ctxbus.db'), 'DATABASE'),
        write(join(home, '.config/ctxbus/credentials.json'), 'CREDENTIALS'),
      ];
      const outside = await run(bin, files, false);
      for (const secret of ['KEY', 'DATABASE', 'CREDENTIALS']) expect(outside).toContain(secret);
      const inside = await run(bin, files, true);
      for (const file of files) expect(inside).toContain(`${file}: hidden`);
    },
  );

  sandboxIt(
    `places outside the home ($CTXBUS_CONFIG_DIR, $CTXBUS_DATA, $CTXBUS_APPROVAL_KEY), the program beside them${because}`,
    async () => {
      // /var/tmp: neither the home nor /tmp, which the sandbox hides anyway.
      const base = realpathSync(mkdtempSync('/var/tmp/ctxbus-hub-files-'));
      try {
        process.env.HOME = tempDir('ctxbus-home-');
        process.env.CTXBUS_CONFIG_DIR = join(base, 'config');
        process.env.CTXBUS_DATA = join(base, 'data');
        process.env.CTXBUS_APPROVAL_KEY = join(base, 'shared', 'hub-key.pem');
        const bin = join(base, 'bin');
        peek(bin);
        const secrets = [
          write(join(base, 'config/keys/postgres/approval-key.pem'), 'KEY'),
          write(join(base, 'config/credentials.json'), 'CREDENTIALS'),
          write(join(base, 'data/ctxbus.db'), 'DATABASE'),
          write(join(base, 'shared/hub-key.pem'), 'SHARED KEY'),
        ];
        const control = write(join(base, 'shared/readme.txt'), 'PUBLIC');
        const outside = await run(bin, [...secrets, control], false);
        for (const secret of ['KEY', 'CREDENTIALS', 'DATABASE', 'SHARED KEY', 'PUBLIC']) {
          expect(outside).toContain(secret);
        }
        const inside = await run(bin, [...secrets, control], true);
        // A hidden file has /dev/null bound over it, on a mount without devices: it cannot be
        // opened.
        for (const file of secrets) expect(inside).toContain(`${file}: hidden`);
        expect(inside).toContain(`${control}: PUBLIC`);
      } finally {
        rmSync(base, { recursive: true, force: true });
      }
    },
  );
});
