import { describe, expect, it } from 'vitest';
import type { RunCommandOptions } from './run-command.js';
import { runCommand } from './run-command.js';
import { NODE, processGone, tempDir, waitUntil } from './test-support.js';

const env = { PATH: '/usr/bin:/bin' };

function options(argv: string[], extra: Partial<RunCommandOptions> = {}): RunCommandOptions {
  return {
    argv,
    cwd: tempDir(),
    env,
    timeoutMs: 120_000,
    inactivityMs: 20_000,
    maxOutputBytes: 64 * 1024,
    killGraceMs: 300,
    ...extra,
  };
}

// A child that starts a grandchild in its own process group and prints the grandchild's pid;
// both ignore SIGTERM when asked, so that only SIGKILL ends them.
function parentScript({
  ignoreTerm,
  chatty,
  exit,
}: {
  ignoreTerm: boolean;
  chatty: boolean;
  exit?: boolean;
}) {
  const grandchild = `${ignoreTerm ? "process.on('SIGTERM',()=>{});" : ''}setInterval(()=>{},1000)`;
  return [
    "const { spawn } = require('node:child_process');",
    `const g = spawn(process.execPath, ['-e', ${JSON.stringify(grandchild)}], { stdio: 'ignore' });`,
    ignoreTerm ? "process.on('SIGTERM',()=>{});" : '',
    "process.stdout.write('grandchild ' + g.pid + '\\n');",
    exit ? 'g.unref(); process.exit(0);' : '',
    chatty ? "setInterval(()=>process.stdout.write('.'),30);" : 'setInterval(()=>{},1000);',
  ].join('\n');
}

function grandchildPid(stdout: string): number {
  const pid = Number(/grandchild (\d+)/.exec(stdout)?.[1]);
  expect(pid).toBeGreaterThan(0);
  return pid;
}

describe('runCommand', () => {
  it('runs argv without a shell and returns exit code, both streams and timings', async () => {
    const result = await runCommand(
      options([
        NODE,
        '-e',
        "process.stdout.write('out'); process.stderr.write('err'); process.exit(3)",
      ]),
    );
    expect(result).toMatchObject({
      exitCode: 3,
      signal: null,
      stdout: 'out',
      stderr: 'err',
      truncated: false,
      timedOut: null,
      canceled: false,
      error: null,
    });
    expect(result.spawnMs).toBeGreaterThan(0);
    expect(result.durationMs).toBeGreaterThanOrEqual(result.spawnMs as number);
    const literal = await runCommand(options(['/bin/echo', '$HOME;ls', '`id`']));
    expect(literal.stdout).toBe('$HOME;ls `id`\n');
  });

  it('runs the child as the leader of its own process group, with stdin closed', async () => {
    const result = await runCommand(
      options([
        NODE,
        '-e',
        [
          "const s = require('fs').readFileSync('/proc/self/stat', 'utf8');",
          "const pgrp = s.slice(s.lastIndexOf(')') + 2).split(' ')[2];",
          "let input = '';",
          "process.stdin.on('data', (d) => { input += d; });",
          "process.stdin.on('end', () => console.log(pgrp, process.pid, JSON.stringify(input)));",
        ].join('\n'),
      ]),
    );
    const [pgrp, pid, input] = result.stdout.trim().split(' ');
    expect(pgrp).toBe(pid);
    expect(input).toBe('""');
  });

  it('hard timeout: ends the whole group, SIGKILL after the grace when SIGTERM is ignored', async () => {
    let aliveBefore = false;
    const result = await runCommand(
      // Far from node's start-up time on a loaded machine: the grandchild must exist first.
      options([NODE, '-e', parentScript({ ignoreTerm: true, chatty: true })], {
        timeoutMs: 5_000,
        onOutput: (_stream, chunk) => {
          const pid = /grandchild (\d+)/.exec(chunk)?.[1];
          if (pid) aliveBefore = !processGone(Number(pid));
        },
      }),
    );
    expect(aliveBefore).toBe(true);
    expect(result.timedOut).toBe('hard');
    expect(result.signal).toBe('SIGKILL');
    const pid = grandchildPid(result.stdout);
    await waitUntil(() => processGone(pid), `grandchild ${pid} to be gone`);
  });

  it('inactivity timeout: no output for N ms ends the whole group with SIGTERM', async () => {
    const result = await runCommand(
      // The script prints once, then nothing: the window must outlast node's start-up (loaded
      // machine), or the command ends before it starts its grandchild.
      options([NODE, '-e', parentScript({ ignoreTerm: false, chatty: false })], {
        inactivityMs: 5_000,
      }),
    );
    expect(result.timedOut).toBe('inactivity');
    expect(result.signal).toBe('SIGTERM');
    const pid = grandchildPid(result.stdout);
    await waitUntil(() => processGone(pid), `grandchild ${pid} to be gone`);
  });

  it('cancel through an AbortSignal ends the whole group', async () => {
    const controller = new AbortController();
    const result = await runCommand(
      options([NODE, '-e', parentScript({ ignoreTerm: false, chatty: true })], {
        signal: controller.signal,
        onOutput: (_stream, chunk) => {
          if (chunk.includes('grandchild')) controller.abort();
        },
      }),
    );
    expect(result.canceled).toBe(true);
    expect(result.timedOut).toBeNull();
    const pid = grandchildPid(result.stdout);
    await waitUntil(() => processGone(pid), `grandchild ${pid} to be gone`);
    const before = await runCommand(options(['/bin/echo', 'never'], { signal: controller.signal }));
    expect(before).toMatchObject({ canceled: true, spawnMs: null, stdout: '' });
  });

  it('a grandchild left behind by a command that exits is ended with it', async () => {
    const result = await runCommand(
      options([NODE, '-e', parentScript({ ignoreTerm: true, chatty: false, exit: true })]),
    );
    expect(result.exitCode).toBe(0);
    const pid = grandchildPid(result.stdout);
    await waitUntil(() => processGone(pid), `grandchild ${pid} to be gone`);
  });

  it('caps each stream keeping head and tail with a marker, and bounds progress', async () => {
    let progress = 0;
    const result = await runCommand(
      options(
        [
          NODE,
          '-e',
          "process.stdout.write('HEAD\\n' + 'x'.repeat(100000) + '\\nTAIL'); process.stderr.write('small')",
        ],
        {
          maxOutputBytes: 1_000,
          maxProgressBytes: 2_000,
          onOutput: (_stream, chunk) => {
            progress += Buffer.byteLength(chunk);
          },
        },
      ),
    );
    expect(result.truncated).toBe(true);
    // Cut at line breaks: the x line, cut at both ends, is left out whole.
    expect(result.stdout).toBe(`HEAD\n\n…[truncated ${100_001} bytes]…\nTAIL`);
    expect(result.stderr).toBe('small');
    expect(progress).toBe(2_000);
  });

  it('a program that cannot start gives an error, not a throw', async () => {
    const result = await runCommand(options(['/nonexistent/program']));
    expect(result.exitCode).toBeNull();
    expect(result.spawnMs).toBeNull();
    expect(result.error).toMatch(/ENOENT/);
    const refused = await runCommand(options(['/bin/echo', 'a\0b']));
    expect(refused).toMatchObject({ exitCode: null, spawnMs: null });
    expect(refused.error).toMatch(/null bytes|\\0/);
  });
});

describe('runCommand: a cut output holds no piece of a secret', () => {
  it('cuts head and tail at line breaks, so a token across a cut is not left in part', async () => {
    // 1,000 bytes kept: a 500-byte head and tail. A 40-character token straddles each cut.
    const token = `ghp_${'A1b2C3d4E5'.repeat(4)}`;
    const script = `const t = ${JSON.stringify(token)};
      process.stdout.write('l1\\n' + 'h'.repeat(480) + t + '\\n' + 'm'.repeat(5000) + '\\n' + t + 't'.repeat(480) + '\\nend\\n')`;
    const result = await runCommand(options([NODE, '-e', script], { maxOutputBytes: 1_000 }));
    expect(result.truncated).toBe(true);
    expect(result.stdout).toMatch(/^l1\n\n…\[truncated \d+ bytes\]…\nend\n$/);
    expect(result.stdout).not.toMatch(/A1b2|C3d4|E5A1/);
  });
});
