import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { removeDir, runCli, tempDir } from '@ctxbus/test-kit';
import { afterAll, describe, expect, it } from 'vitest';

// Usage from the runtimes through the real `ctxbus handoff` commands: Claude Code's status line
// command (its stdin as Claude Code 2.1.329 builds it), `usage --from openclaw` against the real
// OpenClaw CLI from test/e2e, and the monitor and `switch --back` acting on it.

const here = dirname(fileURLToPath(import.meta.url));
const OPENCLAW = resolve(here, '../../../../test/e2e/node_modules/.bin/openclaw');
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) removeDir(dir);
});
const fresh = () => {
  const dir = tempDir('ctxbus-handoff-usage-cli-');
  dirs.push(dir);
  return dir;
};
function setup() {
  const home = fresh();
  const config = join(home, 'config.yaml');
  writeFileSync(
    config,
    'models: { primary: opus, secondary: codex }\nthresholds: { switch_to_secondary: 90, switch_back: 50 }\nsafety: { max_wait_seconds: 0 }\n',
  );
  return { workspace: home, env: { HOME: home, CONTEXT_BUS_CONFIG: config } };
}

/** Claude Code's status line input (2.1.329): the fields its binary sets, plan limits included. */
function statusLineInput(fiveHour: number, sevenDay: number) {
  return JSON.stringify({
    session_id: '0d6c1f6e-5c1a-4a43-9a55-2f0f3f0c9b7e',
    transcript_path: '/tmp/t.jsonl',
    cwd: '/tmp',
    model: { id: 'claude-opus-4-5', display_name: 'Opus 4.5' },
    workspace: { current_dir: '/tmp', project_dir: '/tmp', added_dirs: [] },
    version: '2.1.329',
    output_style: { name: 'default' },
    cost: {
      total_cost_usd: 0.1,
      total_duration_ms: 1000,
      total_api_duration_ms: 500,
      total_lines_added: 0,
      total_lines_removed: 0,
    },
    context_window: {
      total_input_tokens: 24000,
      total_output_tokens: 100,
      context_window_size: 200000,
      current_usage: null,
      used_percentage: 12,
      remaining_percentage: 88,
    },
    exceeds_200k_tokens: false,
    rate_limits: {
      five_hour: { used_percentage: fiveHour, resets_at: 4_102_444_800 },
      seven_day: { used_percentage: sevenDay, resets_at: 4_102_444_800 },
    },
  });
}

describe('ctxbus handoff statusline, usage and switch --back', () => {
  it('the status line records the plan usage; the monitor switches on it, then back when the runtime says so', async () => {
    const { workspace, env } = setup();
    const at = ['--workspace', workspace];
    await runCli(
      ['handoff', 'heartbeat', '--model', 'opus', '--usage', '20', '--task', 'ETL', ...at],
      {
        env,
      },
    );
    const line = await runCli(['handoff', 'statusline', ...at], {
      env,
      input: statusLineInput(93, 40),
    });
    expect(line.code, line.stderr).toBe(0);
    expect(line.stdout).toBe(
      'ctxbus handoff · opus: 93% five_hour · context 12% · switch at 90%\n',
    );
    const usage = JSON.parse(readFileSync(join(workspace, '.context-bus', 'usage.json'), 'utf8'));
    expect(usage.models.opus).toMatchObject({
      usage_percent: 93,
      window: 'five_hour',
      resets_at: '2100-01-01T00:00:00.000Z',
      source: 'claude-code-statusline',
    });
    // The agent said 20%; the runtime says 93%: the monitor switches.
    const monitor = await runCli(['handoff', 'monitor', '--once', '--no-publish', ...at], { env });
    expect(monitor.stdout).toBe(
      'monitor: switched opus -> codex (auto_threshold: opus at 93% (claude-code-statusline))\n',
    );
    // Later the person reads /usage in Claude Code and records 30%: the monitor goes back.
    const manual = await runCli(['handoff', 'usage', '--model', 'opus', '--percent', '30', ...at], {
      env,
    });
    expect(manual.stdout).toBe('opus: 30% (usage) from manual\n');
    const back = await runCli(['handoff', 'monitor', '--once', '--no-publish', ...at], { env });
    expect(back.stdout).toBe(
      'monitor: switched back codex -> opus (switch_back: opus at 30% (manual))\n',
    );
    const status = await runCli(['handoff', 'status', '--json', ...at], { env });
    expect(JSON.parse(status.stdout).handoff.model).toMatchObject({
      current: 'opus',
      previous: 'codex',
    });
  });

  it('the status line never fails: a problem is the line (Claude Code would blank it)', async () => {
    const { workspace, env } = setup();
    const line = await runCli(['handoff', 'statusline', '--workspace', workspace], {
      env,
      input: 'not json',
    });
    expect(line.code).toBe(0);
    expect(line.stdout).toBe('ctxbus handoff: the status line input is not JSON\n');
    const apiKey = await runCli(['handoff', 'statusline', '--workspace', workspace], {
      env,
      input: JSON.stringify({ model: { id: 'claude-opus-4-5' } }),
    });
    expect(apiKey.stdout).toBe('ctxbus handoff · opus: no plan usage reported · switch at 90%\n');
    expect(existsSync(join(workspace, '.context-bus', 'usage.json'))).toBe(false);
  });

  it('switch --back returns to model.previous through the same switch; without one it says why', async () => {
    const { workspace, env } = setup();
    const at = ['--workspace', workspace, '--no-publish'];
    const none = await runCli(['handoff', 'switch', '--back', ...at], { env });
    expect(none.code).toBe(5);
    expect(none.stderr).toBe(
      'ctxbus: error: nothing to switch back to: the handoff names no previous model (model.previous)\n',
    );
    await runCli(['handoff', 'heartbeat', '--model', 'opus', '--next', 'Ship', ...at], { env });
    await runCli(['handoff', 'switch', '--to', 'codex', '--reason', 'limit', ...at], { env });
    await runCli(['handoff', 'heartbeat', '--model', 'codex', '--action', 'Fixed CI', ...at], {
      env,
    });
    const back = await runCli(['handoff', 'switch', '--back', ...at], { env });
    expect(back.code, back.stderr).toBe(0);
    expect(back.stdout).toMatch(
      /^Continuing from codex's work on .* \(switched: switch_back: from codex to opus\)\./,
    );
    const neither = await runCli(['handoff', 'switch', ...at], { env });
    expect(neither.code).toBe(2);
    expect(neither.stderr).toBe(
      'ctxbus: error: handoff switch needs --to <model> and --reason <text> (or --back)\n',
    );
  });

  it.skipIf(!existsSync(OPENCLAW))(
    'usage --from openclaw runs the real `openclaw status --usage --json` (skipped when test/e2e has no openclaw installed)',
    async () => {
      const { workspace, env } = setup();
      // Under vitest (NODE_ENV=test, VITEST*) OpenClaw takes itself for a test and prints
      // nothing: it runs with a person's environment, its HOME and PATH only.
      const openclaw = join(workspace, 'openclaw');
      writeFileSync(
        openclaw,
        `#!/bin/sh\nexec env -i HOME="$HOME" PATH="$PATH" '${OPENCLAW}' "$@"\n`,
      );
      chmodSync(openclaw, 0o755);
      // A fresh OpenClaw home has no subscription credentials: it reports providers without
      // usage windows, and nothing is recorded (the agent's heartbeat stays the source).
      const asked = await runCli(
        ['handoff', 'usage', '--from', 'openclaw', '--model', 'codex', '--workspace', workspace],
        { env: { ...env, CTXBUS_OPENCLAW: openclaw } },
      );
      expect(asked.code, asked.stderr).toBe(0);
      expect(asked.stdout).toBe('codex: the runtime reported no usage window; nothing recorded\n');
      expect(existsSync(join(workspace, '.context-bus', 'usage.json'))).toBe(false);
      const missing = await runCli(
        ['handoff', 'usage', '--from', 'openclaw', '--workspace', workspace],
        { env: { ...env, CTXBUS_OPENCLAW: join(workspace, 'no-openclaw') } },
      );
      expect(missing.code).toBe(4);
      expect(missing.stderr).toContain('is not installed (or set CTXBUS_OPENCLAW)');
    },
  );
});
