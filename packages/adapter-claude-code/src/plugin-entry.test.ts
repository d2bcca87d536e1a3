import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { handoffPaths, heartbeat, switchModel } from '@ctxbus/handoff';
import { afterAll, describe, expect, it } from 'vitest';

// The plugin's entry files run on whatever `node` Claude Code finds. On a Node older than 22
// they must fail open with one notice, not crash at import (Node 20 lacks exports the hook
// and server use). The built files are tested, run by a real older Node when there is one.

const DIST = fileURLToPath(new URL('../plugin/dist/', import.meta.url));

function olderNode(): { path: string; version: string } | { path: null; why: string } {
  const path = process.env.CTXBUS_TEST_OLD_NODE ?? '/usr/bin/node';
  if (!existsSync(path)) return { path: null, why: `no ${path} (set CTXBUS_TEST_OLD_NODE)` };
  const version = spawnSync(path, ['--version'], { encoding: 'utf8' }).stdout.trim();
  if (Number(version.slice(1).split('.')[0]) >= 22) {
    return { path: null, why: `${path} is ${version}, not older than 22` };
  }
  return { path, version };
}

const old = olderNode();

const stateDir = mkdtempSync(join(tmpdir(), 'ctxbus-plugin-entry-'));
afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

function run(node: string, file: string, input: string) {
  return spawnSync(node, [`${DIST}${file}`], {
    input,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', CTXBUS_STATE_DIR: stateDir },
    timeout: 120_000,
  });
}

describe('plugin entries on an older Node', () => {
  if (old.path === null) {
    it.skip(`fail open with one notice (skipped: ${old.why})`, () => {});
    return;
  }
  const node = old.path;

  it(`hook: one notice at session start, nothing on other events, exit 0 (${old.version})`, () => {
    const start = run(node, 'ctxbus-claude-hook.js', '{"hook_event_name":"SessionStart"}');
    expect(start.status, start.stderr).toBe(0);
    expect(start.stderr).toBe('');
    expect(JSON.parse(start.stdout)).toEqual({
      systemMessage: `ctxbus: no shared context: its hooks need Node.js 22.3 or later, and \`node\` here is ${old.version}. Install a newer Node, or run \`ctxbus install claude-code\` again: it pins the Node it runs on.`,
    });
    for (const event of ['UserPromptSubmit', 'Stop', 'SessionEnd']) {
      const other = run(node, 'ctxbus-claude-hook.js', `{"hook_event_name":"${event}"}`);
      expect({ event, status: other.status, out: other.stdout }).toEqual({
        event,
        status: 0,
        out: '',
      });
    }
    expect(run(node, 'ctxbus-claude-hook.js', 'not json').status).toBe(0);
  });

  it('MCP server: says which Node it needs, exit 1', () => {
    const server = run(node, 'ctxbus-mcp.js', '');
    expect(server.status).toBe(1);
    expect(server.stderr).toBe(`ctxbus-mcp: needs Node.js 22 or later (this is ${old.version})\n`);
  });
});

describe('plugin entries on this Node', () => {
  it('load the hook itself (it answers, failing open, with no hub configured)', () => {
    const start = run(
      process.execPath,
      'ctxbus-claude-hook.js',
      '{"hook_event_name":"SessionStart","session_id":"s","cwd":"/tmp"}',
    );
    expect(start.status, start.stderr).toBe(0);
    expect(JSON.parse(start.stdout).systemMessage).toMatch(
      /^ctxbus: hub unreachable \(no hub configured/,
    );
  });
});

describe('the built hook and the handoff', () => {
  it('injects the resume note after a switch, with neither zod nor YAML in the bundle', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'ctxbus-plugin-handoff-'));
    try {
      const paths = handoffPaths(workspace);
      await heartbeat(paths, { model: 'opus', task: { description: 'Reports' } });
      await switchModel(paths, { to: 'codex', reason: 'opus at 96%' });
      const input = JSON.stringify({
        hook_event_name: 'UserPromptSubmit',
        session_id: 'handoff',
        cwd: workspace,
        prompt: 'go on',
      });
      const prompt = run(process.execPath, 'ctxbus-claude-hook.js', input);
      expect(prompt.status, prompt.stderr).toBe(0);
      expect(JSON.parse(prompt.stdout).hookSpecificOutput?.additionalContext).toBe(
        "## Model switch (ctxbus handoff)\nContinuing from opus's work on Reports (switched: opus at 96%).",
      );
    } finally {
      rmSync(workspace, { recursive: true, force: true });
    }
    // Every hook call loads this file: the handoff adds its reader, not zod or a YAML parser
    // (each hundreds of KB). 40,261 bytes with the shared live-push rule and the injection
    // report; the bound catches a library pulled in, not a few hundred bytes of our own.
    const bundle = readFileSync(`${DIST}ctxbus-claude-hook-main.cjs`, 'utf8');
    expect(bundle).not.toMatch(/ZodError|\$ZodType|YAMLParseError/);
    expect(bundle.length).toBeLessThan(48_000);
  });
});

describe('the hook run by many tool calls of one session at once', () => {
  it('keeps every PostToolUse change: parallel hooks do not overwrite each other', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ctxbus-parallel-hooks-'));
    const files = Array.from({ length: 10 }, (_, index) => `/work/app/f${index + 1}.ts`);
    // Claude Code runs the PostToolUse hooks of parallel tool calls together.
    await Promise.all(
      files.map(
        (file) =>
          new Promise<void>((resolve, reject) => {
            const child = spawn(process.execPath, [`${DIST}ctxbus-claude-hook.js`], {
              env: { PATH: process.env.PATH ?? '', CTXBUS_STATE_DIR: dir, HOME: dir },
              stdio: ['pipe', 'ignore', 'ignore'],
            });
            child.once('error', reject);
            child.once('exit', (code) =>
              code === 0 ? resolve() : reject(new Error(`exit ${code}`)),
            );
            child.stdin.end(
              JSON.stringify({
                session_id: 'parallel',
                cwd: '/work/app',
                hook_event_name: 'PostToolUse',
                tool_name: 'Edit',
                tool_input: { file_path: file, old_string: 'a', new_string: 'b' },
                tool_response: { filePath: file, success: true },
              }),
            );
          }),
      ),
    );
    const state = JSON.parse(readFileSync(join(dir, 'sessions', 'parallel.json'), 'utf8'));
    expect([...state.filesTouched].sort()).toEqual([...files].sort());
    // Every tool call noted, the newest TOOLS_KEPT (8) of them kept.
    expect(state.tools).toHaveLength(8);
    rmSync(dir, { recursive: true, force: true });
  });
});
