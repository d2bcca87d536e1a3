import { generateKeyPairSync } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { signApproval } from './approval.js';
import type { ExecutionPolicy, ExecutionRequest, Preparation } from './prepare-execution.js';
import { executePlan, prepareExecution } from './prepare-execution.js';
import { detectSandbox } from './sandbox.js';
import { NODE, tempDir } from './test-support.js';

const hub = generateKeyPairSync('ed25519');
const bwrap = await detectSandbox();
const required = process.env.CTXBUS_REQUIRE_BWRAP === '1';
const limits = { timeoutMs: 120_000, inactivityMs: 120_000, maxOutputBytes: 64 * 1024 };

// A root with a project in it and a script that reports where it ran and what it saw.
function setup(overrides: Partial<ExecutionPolicy> = {}) {
  const root = tempDir();
  const project = join(root, 'project');
  mkdirSync(project);
  writeFileSync(
    join(project, 'report.js'),
    "require('fs').writeFileSync('ran.txt', 'yes'); console.log(JSON.stringify({ cwd: process.cwd(), env: process.env }));\n",
  );
  const policy: ExecutionPolicy = {
    allow: ['node report.js', 'git status'],
    roots: [root],
    trustedOrigin: true,
    childPath: `${dirname(NODE)}:/usr/bin:/bin`,
    sourceEnv: { HOME: '/home/w', GITHUB_TOKEN: 'secret', NODE_OPTIONS: '--x', LANG: 'C.UTF-8' },
    approvalPublicKey: hub.publicKey,
    ...overrides,
  };
  return { root, project, policy };
}

function request(project: string, extra: Partial<ExecutionRequest> = {}): ExecutionRequest {
  return { taskId: 'task-1', argv: ['node', 'report.js'], cwd: project, ...extra };
}

function plan(preparation: Preparation) {
  if (!preparation.ok) throw new Error(`refused: ${preparation.code}: ${preparation.reason}`);
  return preparation.plan;
}

describe('prepareExecution and executePlan', () => {
  it('an allowed command in a root runs with a scrubbed environment', async () => {
    const { project, policy } = setup();
    const prepared = await prepareExecution({
      request: request(project, { env: { NODE_OPTIONS: '--inspect', LANG: 'en_US.UTF-8' } }),
      policy,
    });
    const ready = plan(prepared);
    expect(ready.droppedEnv).toEqual([{ name: 'NODE_OPTIONS', reason: expect.any(String) }]);
    const run = await executePlan(ready, limits);
    expect(run.ok).toBe(true);
    if (!run.ok) return;
    expect(run.result.exitCode).toBe(0);
    const seen = JSON.parse(run.result.stdout) as { cwd: string; env: Record<string, string> };
    expect(seen.cwd).toBe(project);
    expect(seen.env).toEqual({
      HOME: '/home/w',
      LANG: 'en_US.UTF-8',
      PATH: policy.childPath,
      // bwrap (the PID namespace tying the command to the worker) sets PWD, to the real cwd.
      ...(ready.pidNamespace && { PWD: project }),
    });
  });

  it('outside the allow-list: approval_required with the exact command; a valid approval runs it', async () => {
    const { project, policy } = setup({ allow: ['git status'] });
    const refused = await prepareExecution({ request: request(project), policy });
    expect(refused).toMatchObject({
      ok: false,
      code: 'approval_required',
      reason: expect.stringContaining('not in remote_execution.allow'),
      approvalRequest: {
        taskId: 'task-1',
        argv: ['node', 'report.js'],
        cwd: project,
        because: 'not_allowed',
      },
    });
    if (refused.ok || !refused.approvalRequest) throw new Error('expected a refusal');
    expect(refused.approvalRequest.scriptHash).toMatch(/^[0-9a-f]{64}$/);
    const token = signApproval(hub.privateKey, {
      taskId: 'task-1',
      digest: refused.approvalRequest.digest,
      approvedBy: 'alice',
    });
    const approved = plan(
      await prepareExecution({ request: request(project), policy, approval: token }),
    );
    expect(approved.approvedBy).toBe('alice');
    const run = await executePlan(approved, limits);
    expect(run.ok && run.result.exitCode).toBe(0);
    expect(readFileSync(join(project, 'ran.txt'), 'utf8')).toBe('yes');

    // The same approval does not cover other arguments, another task, or an edited script.
    expect(
      await prepareExecution({
        request: request(project, { argv: ['node', 'report.js', 'x'] }),
        policy,
        approval: token,
      }),
    ).toMatchObject({ ok: false, code: 'approval_invalid' });
    expect(
      await prepareExecution({
        request: request(project, { taskId: 'task-2' }),
        policy,
        approval: token,
      }),
    ).toMatchObject({ ok: false, code: 'approval_invalid' });
    writeFileSync(join(project, 'report.js'), "console.log('changed')\n");
    expect(
      await prepareExecution({ request: request(project), policy, approval: token }),
    ).toMatchObject({
      ok: false,
      code: 'approval_invalid',
      reason: expect.stringContaining('changed since'),
    });
    // No hub key: no approval can be checked, so none counts.
    expect(
      await prepareExecution({
        request: request(project),
        policy: { ...policy, approvalPublicKey: undefined },
        approval: token,
      }),
    ).toMatchObject({ ok: false, code: 'approval_invalid' });
  });

  it('a command whose files are too large to bind an approval to is refused, not left to retry', async () => {
    const { project, policy } = setup({ allow: ['git status'] });
    // Any origin may ask for it: the worker hashes what would need approval before anyone sees it.
    const refused = await prepareExecution({
      request: request(project, { argv: ['perl', '/proc/self/pagemap'] }),
      policy,
    });
    expect(refused).toMatchObject({
      ok: false,
      code: 'not_allowed',
      reason: expect.stringMatching(
        /^cannot bind an approval to this command: \/proc\/self\/pagemap takes a script past/,
      ),
    });
  });

  it('an origin whose trust does not permit execution needs an approval even for an allowed command', async () => {
    const { project, policy } = setup({ trustedOrigin: false });
    const refused = await prepareExecution({ request: request(project), policy });
    expect(refused).toMatchObject({
      ok: false,
      code: 'approval_required',
      approvalRequest: { because: 'untrusted_origin' },
    });
    if (refused.ok || !refused.approvalRequest) throw new Error('expected a refusal');
    const token = signApproval(hub.privateKey, {
      taskId: 'task-1',
      digest: refused.approvalRequest.digest,
      approvedBy: 'bob',
    });
    expect(
      await prepareExecution({ request: request(project), policy, approval: token }),
    ).toMatchObject({ ok: true });
  });

  it('inline evaluation is refused, with or without an approval', async () => {
    const { project, policy } = setup({ allow: ['node ...'] });
    const eval_ = request(project, {
      argv: ['node', '-e', "require('fs').writeFileSync('ran.txt','x')"],
    });
    const refused = await prepareExecution({ request: eval_, policy });
    expect(refused).toMatchObject({
      ok: false,
      code: 'inline_eval',
      reason: expect.stringContaining('-e'),
    });
    expect(
      await prepareExecution({ request: request(project, { argv: ['bash', '-c', 'id'] }), policy }),
    ).toMatchObject({
      ok: false,
      code: 'inline_eval',
    });
    expect(existsSync(join(project, 'ran.txt'))).toBe(false);
  });

  it('a working directory outside the roots, through .. or a symlink, and a program outside it are workdir_escape', async () => {
    const { root, project, policy } = setup();
    const outside = tempDir();
    symlinkSync(outside, join(root, 'link'));
    for (const cwd of [
      outside,
      `${project}/../../${outside.split('/').pop()}`,
      join(root, 'link'),
    ]) {
      expect(
        await prepareExecution({ request: request(project, { cwd }), policy }),
        cwd,
      ).toMatchObject({
        ok: false,
        code: 'workdir_escape',
      });
    }
    writeFileSync(join(outside, 'evil.sh'), '#!/bin/sh\n', { mode: 0o755 });
    symlinkSync(join(outside, 'evil.sh'), join(project, 'tool.sh'));
    for (const argv of [['../outside.sh'], ['./tool.sh']]) {
      expect(
        await prepareExecution({
          request: request(project, { argv }),
          policy: { ...policy, allow: [argv.join(' ')] },
        }),
        argv[0],
      ).toMatchObject({ ok: false, code: 'workdir_escape' });
    }
  });

  it('a request missing a field is refused naming it (an A2A data part without cwd)', async () => {
    const { policy } = setup();
    const prepared = await prepareExecution({
      request: { taskId: 'task-1', argv: ['npm', 'test'] } as unknown as ExecutionRequest,
      policy,
    });
    expect(prepared).toMatchObject({ ok: false, code: 'invalid_request' });
    expect(prepared.ok ? '' : prepared.reason).toMatch(/^invalid request: cwd: /);
  });

  it("a sandboxed command may not run inside the hub's files (its bind would make them writable)", async () => {
    const { root, policy } = setup({ allow: ['node report.js'] });
    const config = join(root, 'ctxbus-config');
    mkdirSync(join(config, 'keys'), { recursive: true });
    writeFileSync(join(config, 'keys', 'report.js'), '1;\n');
    const before = process.env.CTXBUS_CONFIG_DIR;
    process.env.CTXBUS_CONFIG_DIR = config;
    try {
      const prepared = await prepareExecution({
        request: request(join(config, 'keys'), { sandboxed: true }),
        policy,
      });
      expect(prepared).toMatchObject({ ok: false, code: 'workdir_escape' });
      expect(prepared.ok ? '' : prepared.reason).toMatch(/inside the hub's files/);
    } finally {
      if (before === undefined) delete process.env.CTXBUS_CONFIG_DIR;
      else process.env.CTXBUS_CONFIG_DIR = before;
    }
  });

  it('the working directory is checked again at spawn: swapped for a symlink after validation, it is refused', async () => {
    const { root, project, policy } = setup();
    const ready = plan(await prepareExecution({ request: request(project), policy }));
    // After validation, the project becomes a symlink to a directory outside the roots that
    // holds a script of the same name.
    const outside = tempDir();
    writeFileSync(
      join(outside, 'report.js'),
      "require('fs').writeFileSync('ran.txt', 'escaped');\n",
    );
    renameSync(project, join(root, 'moved'));
    symlinkSync(outside, project);
    const run = await executePlan(ready, limits);
    expect(run).toMatchObject({
      ok: false,
      code: 'workdir_escape',
      reason: expect.stringContaining('at spawn'),
    });
    expect(existsSync(join(outside, 'ran.txt'))).toBe(false);

    // Swapped for a symlink that stays inside the roots but elsewhere: refused too (the real
    // path changed since validation).
    const { root: root2, project: project2, policy: policy2 } = setup();
    const ready2 = plan(await prepareExecution({ request: request(project2), policy: policy2 }));
    renameSync(project2, join(root2, 'other'));
    symlinkSync(join(root2, 'other'), project2);
    expect(await executePlan(ready2, limits)).toMatchObject({
      ok: false,
      code: 'workdir_escape',
      reason: expect.stringContaining('now resolves to'),
    });
  });

  it('sandboxed requests are refused with the reason where bwrap is missing (fail closed), never run plain', async () => {
    const { project, policy } = setup({ sandbox: { bwrapPath: '/nonexistent/bwrap' } });
    expect(
      await prepareExecution({ request: request(project, { sandboxed: true }), policy }),
    ).toMatchObject({
      ok: false,
      code: 'sandbox_unavailable',
      reason: expect.stringContaining('/nonexistent/bwrap'),
    });
    expect(
      await prepareExecution({
        request: request(project),
        policy: { ...policy, requireSandbox: true },
      }),
    ).toMatchObject({ ok: false, code: 'sandbox_unavailable' });
    expect(
      await prepareExecution({
        request: request(project, { sandboxed: true }),
        policy: { ...policy, sandbox: { searchPath: '/nonexistent' } },
      }),
    ).toMatchObject({
      ok: false,
      code: 'sandbox_unavailable',
      reason: expect.stringContaining('not installed'),
    });
    expect(existsSync(join(project, 'ran.txt'))).toBe(false);
  });

  it('a command only a code-running entry allows waits for a human outside the sandbox, never runs bare', async () => {
    const { project, policy } = setup({ allow: ['node ...'] });
    const inline = ['node', '--stack-size=999', 'report.js'];
    const bare = await prepareExecution({ request: request(project, { argv: inline }), policy });
    expect(bare).toMatchObject({
      ok: false,
      code: 'approval_required',
      reason: expect.stringContaining('free arguments'),
      approvalRequest: { because: 'runs_code', argv: inline },
    });
    expect(existsSync(join(project, 'ran.txt'))).toBe(false);
    // Inside the sandbox it needs no one (bwrap missing: refused, fail closed).
    const inside = await prepareExecution({
      request: request(project, { argv: inline, sandboxed: true }),
      policy: { ...policy, sandbox: { bwrapPath: '/nonexistent/bwrap' } },
    });
    expect(inside).toMatchObject({ ok: false, code: 'sandbox_unavailable' });
    // An exact entry for the same command is the author's own words: it runs bare.
    const exact = await prepareExecution({
      request: request(project, { argv: inline }),
      policy: { ...policy, allow: ['node ...', 'node --stack-size=999 report.js'] },
    });
    expect(exact.ok).toBe(true);
  });

  (bwrap.available || required ? it : it.skip)(
    `a command only a code-running entry allows runs sandboxed without approval, its directory read-only${bwrap.available ? '' : ` (skipped: ${bwrap.reason})`}`,
    async () => {
      const { project, policy } = setup({ allow: ['node ...'] });
      const ready = plan(
        await prepareExecution({
          request: request(project, {
            argv: ['node', '--stack-size=999', 'report.js'],
            sandboxed: true,
          }),
          policy,
        }),
      );
      expect(ready.sandbox).toMatchObject({ writable: false });
      expect(ready.approvedBy).toBeNull();
      // It reads the directory, and cannot change it: nothing planted for the commands that
      // run there outside the sandbox (report.js writes ran.txt first).
      const run = await executePlan(ready, limits);
      expect(run.ok && run.result.exitCode).not.toBe(0);
      expect(run.ok && run.result.stderr).toMatch(/EROFS|read-only file system/);
      expect(existsSync(join(project, 'ran.txt'))).toBe(false);
      writeFileSync(
        join(project, 'read.js'),
        "console.log(require('fs').readFileSync('report.js', 'utf8').length);\n",
      );
      const reads = plan(
        await prepareExecution({
          request: request(project, { argv: ['node', 'read.js'], sandboxed: true }),
          policy,
        }),
      );
      expect(reads.sandbox).toMatchObject({ writable: false });
      const read = await executePlan(reads, limits);
      expect(read.ok && read.result.stdout.trim()).toMatch(/^\d+$/);
      // An exact entry (the author's own words) runs sandboxed with the directory writable.
      const exact = plan(
        await prepareExecution({
          request: request(project, { sandboxed: true }),
          policy: { ...policy, allow: ['node report.js'] },
        }),
      );
      expect(exact.sandbox).toMatchObject({ writable: true });
      const wrote = await executePlan(exact, limits);
      expect(wrote.ok && wrote.result.exitCode).toBe(0);
      expect(readFileSync(join(project, 'ran.txt'), 'utf8')).toBe('yes');
    },
  );

  (bwrap.available || required ? it : it.skip)(
    `a sandboxed command's /tmp is the size the policy gives${bwrap.available ? '' : ` (skipped: ${bwrap.reason})`}`,
    async () => {
      const { project, policy } = setup({
        allow: ['df -k /tmp'],
        childPath: '/usr/bin:/bin',
        sandbox: { tmpBytes: 16 * 1024 * 1024 },
      });
      const ready = plan(
        await prepareExecution({
          request: request(project, { argv: ['df', '-k', '/tmp'], sandboxed: true }),
          policy,
        }),
      );
      const run = await executePlan(ready, limits);
      expect(run.ok && run.result.exitCode).toBe(0);
      // The last line's second column: the file system's size in KiB.
      const size = run.ok ? run.result.stdout.trim().split('\n').at(-1)?.split(/\s+/)[1] : '';
      expect(size).toBe(String(16 * 1024));
    },
  );

  it('a sandboxed request asking for network the capability does not allow is refused', async () => {
    const { project, policy } = setup();
    expect(
      await prepareExecution({
        request: request(project, { sandboxed: true, network: true }),
        policy,
      }),
    ).toMatchObject({ ok: false, code: 'not_allowed', reason: expect.stringContaining('network') });
  });

  (bwrap.available || required ? it : it.skip)(
    `a sandboxed plan runs inside bwrap: the workdir is writable, the roots around it are not${bwrap.available ? '' : ` (skipped: ${bwrap.reason})`}`,
    async () => {
      const { root, project, policy } = setup({
        allow: ['node report.js', 'node write-up.js'],
      });
      writeFileSync(
        join(project, 'write-up.js'),
        `require('fs').writeFileSync(${JSON.stringify(join(root, 'up.txt'))}, 'x');\n`,
      );
      const ready = plan(
        await prepareExecution({ request: request(project, { sandboxed: true }), policy }),
      );
      expect(ready.sandbox).toMatchObject({ network: false });
      const run = await executePlan(ready, limits);
      expect(run.ok && run.result.exitCode).toBe(0);
      expect(readFileSync(join(project, 'ran.txt'), 'utf8')).toBe('yes');
      const up = plan(
        await prepareExecution({
          request: request(project, { sandboxed: true, argv: ['node', 'write-up.js'] }),
          policy,
        }),
      );
      // The roots live under /tmp here, which is a private tmpfs in the sandbox: the write
      // lands there (or fails), never on the host.
      const outside = await executePlan(up, limits);
      expect(outside.ok).toBe(true);
      expect(existsSync(join(root, 'up.txt'))).toBe(false);
    },
  );

  it("the policy's maxSeconds caps the hard timeout", async () => {
    const { project, policy } = setup({ allow: ['node slow.js'], maxSeconds: 1 });
    writeFileSync(join(project, 'slow.js'), "setInterval(() => process.stdout.write('.'), 50);\n");
    const ready = plan(
      await prepareExecution({ request: request(project, { argv: ['node', 'slow.js'] }), policy }),
    );
    expect(ready.maxTimeoutMs).toBe(1_000);
    const run = await executePlan(ready, { ...limits, killGraceMs: 200 });
    expect(run.ok && run.result.timedOut).toBe('hard');
    expect(run.ok && run.result.durationMs).toBeLessThan(limits.timeoutMs);
  });

  it('a malformed request or allow-list is refused, not thrown', async () => {
    const { project, policy } = setup();
    expect(
      await prepareExecution({ request: request(project, { argv: [] }), policy }),
    ).toMatchObject({
      ok: false,
      code: 'invalid_request',
    });
    expect(
      await prepareExecution({
        request: request(project),
        policy: { ...policy, allow: ['npm test; rm -rf /'] },
      }),
    ).toMatchObject({ ok: false, code: 'not_allowed', reason: expect.stringContaining("';'") });
  });
});
