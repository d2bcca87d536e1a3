import { writeFileSync } from 'node:fs';
import { removeDir, tempDir } from '@ctxbus/test-kit';
import { afterAll, describe, expect, it } from 'vitest';
import { parseHandoffConfig } from './handoff-config.js';
import { readHandoff } from './handoff-file.js';
import { monitorOnce } from './handoff-monitor.js';
import type { Clock } from './handoff-ops.js';
import { heartbeat } from './handoff-ops.js';
import { handoffPaths } from './handoff-paths.js';
import {
  parseClaudeStatusLine,
  parseOpenClawStatus,
  readUsageReports,
  recordUsage,
  type UsageReport,
  usageFromClaudeStatusLine,
  usageFromOpenClawStatus,
} from './runtime-usage.js';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) removeDir(dir);
});
const paths = () => {
  const dir = tempDir('ctxbus-handoff-usage-');
  dirs.push(dir);
  return handoffPaths(dir);
};
const config = parseHandoffConfig(`
models: { primary: opus, secondary: codex }
thresholds: { switch_to_secondary: 95, switch_back: 50, proactive_summary: 80 }
safety: { max_wait_seconds: 0 }
`);
const clockAt = (iso: string): Clock => ({ now: () => new Date(iso), sleep: async () => {} });
const report = (percent: number, at: string, resetsAt: string | null = null): UsageReport => ({
  usage_percent: percent,
  window: 'five_hour',
  resets_at: resetsAt,
  source: 'claude-code-statusline',
  reported_at: at,
});

/**
 * What Claude Code 2.1.329 writes to its status line command (the object its binary builds:
 * session_id, transcript_path, cwd, model, workspace, version, output_style, cost,
 * context_window, exceeds_200k_tokens, and rate_limits for plan sessions; resets_at in Unix
 * seconds).
 */
const STATUS_LINE = {
  session_id: '0d6c1f6e-5c1a-4a43-9a55-2f0f3f0c9b7e',
  transcript_path: '/home/me/.claude/projects/-home-me-clawd/0d6c1f6e.jsonl',
  cwd: '/home/me/clawd',
  model: { id: 'claude-opus-4-5', display_name: 'Opus 4.5' },
  workspace: { current_dir: '/home/me/clawd', project_dir: '/home/me/clawd', added_dirs: [] },
  version: '2.1.329',
  output_style: { name: 'default' },
  cost: {
    total_cost_usd: 0.42,
    total_duration_ms: 180000,
    total_api_duration_ms: 2300,
    total_lines_added: 156,
    total_lines_removed: 23,
  },
  context_window: {
    total_input_tokens: 15234,
    total_output_tokens: 4521,
    context_window_size: 200000,
    current_usage: {
      input_tokens: 8500,
      output_tokens: 1200,
      cache_creation_input_tokens: 5000,
      cache_read_input_tokens: 2000,
    },
    used_percentage: 8,
    remaining_percentage: 92,
  },
  exceeds_200k_tokens: false,
  fast_mode: false,
  thinking: { enabled: true },
  rate_limits: {
    five_hour: { used_percentage: 96, resets_at: 1_795_000_000 },
    seven_day: { used_percentage: 41, resets_at: 1_795_400_000 },
  },
};

describe("Claude Code's status line input", () => {
  it('gives the busiest rate-limit window, with its reset time', () => {
    const now = new Date('2026-11-25T08:00:00Z');
    expect(
      usageFromClaudeStatusLine(parseClaudeStatusLine(JSON.stringify(STATUS_LINE)), now),
    ).toEqual({
      usage_percent: 96,
      window: 'five_hour',
      resets_at: new Date(1_795_000_000 * 1000).toISOString(),
      source: 'claude-code-statusline',
      reported_at: now.toISOString(),
    });
  });

  it('reports nothing for a session without plan limits (API key: no rate_limits)', () => {
    const { rate_limits: _none, ...apiKey } = STATUS_LINE;
    expect(
      usageFromClaudeStatusLine(parseClaudeStatusLine(JSON.stringify(apiKey)), new Date()),
    ).toBe(null);
  });

  it('refuses what is not its input', () => {
    expect(() => parseClaudeStatusLine('not json')).toThrow('the status line input is not JSON');
    expect(() =>
      parseClaudeStatusLine(
        JSON.stringify({ rate_limits: { five_hour: { used_percentage: 'x' } } }),
      ),
    ).toThrow(/rate_limits\.five_hour\.used_percentage/);
  });
});

describe('openclaw status --usage --json', () => {
  /** Its `usage` block: a ProviderUsageSnapshot per provider (resetAt in milliseconds). */
  const STATUS = {
    usage: {
      updatedAt: 1_795_000_000_000,
      providers: [
        { provider: 'openai', displayName: 'OpenAI', windows: [], error: 'No credentials' },
        {
          provider: 'anthropic',
          displayName: 'Claude',
          windows: [
            { label: '5h', usedPercent: 42, resetAt: 1_795_010_000_000 },
            { label: 'Week', usedPercent: 71, resetAt: 1_795_300_000_000 },
          ],
          plan: 'Max (20x)',
        },
      ],
    },
  };

  it('gives the busiest window of the first provider with any, or of the one named', () => {
    const now = new Date('2026-11-25T08:00:00Z');
    const status = parseOpenClawStatus(JSON.stringify(STATUS));
    expect(usageFromOpenClawStatus(status, now)).toEqual({
      usage_percent: 71,
      window: 'Week',
      resets_at: new Date(1_795_300_000_000).toISOString(),
      source: 'openclaw-status',
      reported_at: now.toISOString(),
    });
    expect(usageFromOpenClawStatus(status, now, 'openai')).toBe(null);
    expect(usageFromOpenClawStatus(parseOpenClawStatus('{"runtimeVersion":"x"}'), now)).toBe(null);
  });
});

describe('usage.json', () => {
  it('keeps the latest report per model; a damaged file is refused, then replaced', async () => {
    const at = paths();
    expect(readUsageReports(at)).toEqual({});
    await recordUsage(at, 'opus', report(40, '2026-11-25T08:00:00.000Z'));
    await recordUsage(at, 'codex', report(10, '2026-11-25T08:00:00.000Z'));
    await recordUsage(at, 'opus', report(60, '2026-11-25T08:05:00.000Z'));
    expect(readUsageReports(at)).toMatchObject({
      opus: { usage_percent: 60 },
      codex: { usage_percent: 10 },
    });
    writeFileSync(at.usage, '{"schema_version":1,"models":{"opus":{"usage_percent":500}}}');
    expect(() => readUsageReports(at)).toThrow(/usage\.json: models\.opus/);
    await recordUsage(at, 'opus', report(5, '2026-11-25T08:10:00.000Z'));
    expect(Object.keys(readUsageReports(at))).toEqual(['opus']);
  });
});

describe('the monitor reads the runtime first', () => {
  it("switches on the runtime's number when the agent says less", async () => {
    const at = paths();
    await heartbeat(
      at,
      { model: 'opus', usagePercent: 50 },
      { now: new Date('2026-11-25T08:00:00Z') },
    );
    await recordUsage(at, 'opus', report(96, '2026-11-25T08:01:00.000Z'));
    const action = await monitorOnce(at, config, { clock: clockAt('2026-11-25T08:02:00Z') });
    expect(action).toMatchObject({
      action: 'switched',
      from: 'opus',
      usage: 96,
      source: 'claude-code-statusline',
    });
    expect(readHandoff(at)?.model.switch_reason).toBe(
      'auto_threshold: opus at 96% (claude-code-statusline)',
    );
  });

  it('ignores a report made before the model became current: the agent says then', async () => {
    const at = paths();
    await heartbeat(at, { model: 'opus' }, { now: new Date('2026-11-25T08:00:00Z') });
    // codex was at its limit yesterday, before the agent came to it.
    await recordUsage(at, 'codex', report(99, '2026-11-24T08:00:00.000Z'));
    await recordUsage(at, 'opus', report(97, '2026-11-25T08:01:00.000Z'));
    expect(await monitorOnce(at, config, { clock: clockAt('2026-11-25T08:02:00Z') })).toMatchObject(
      { action: 'switched', from: 'opus' },
    );
    expect(await monitorOnce(at, config, { clock: clockAt('2026-11-25T08:03:00Z') })).toMatchObject(
      { action: 'none', reason: 'no usage reported yet' },
    );
    await heartbeat(
      at,
      { model: 'codex', usagePercent: 30 },
      { now: new Date('2026-11-25T08:04:00Z') },
    );
    expect(await monitorOnce(at, config, { clock: clockAt('2026-11-25T08:05:00Z') })).toMatchObject(
      { action: 'ok', usage: { percent: 30, source: 'agent' } },
    );
  });
});

describe('switch_back', () => {
  it('returns to the primary once its runtime reports it at or below switch_back, not before', async () => {
    const at = paths();
    await heartbeat(
      at,
      { model: 'opus', task: { description: 'Billing' }, nextSteps: ['Backfill'] },
      { now: new Date('2026-11-25T08:00:00Z') },
    );
    await recordUsage(at, 'opus', report(96, '2026-11-25T08:01:00.000Z'));
    await monitorOnce(at, config, { clock: clockAt('2026-11-25T08:02:00Z') });
    expect(readHandoff(at)?.model.current).toBe('codex');
    await heartbeat(
      at,
      { model: 'codex', usagePercent: 20 },
      { now: new Date('2026-11-25T08:03:00Z') },
    );
    // The primary's last word is from before the switch (96%): stay.
    expect(await monitorOnce(at, config, { clock: clockAt('2026-11-25T08:04:00Z') })).toMatchObject(
      { action: 'ok' },
    );
    // Its runtime says 60%: above switch_back, stay.
    await recordUsage(at, 'opus', report(60, '2026-11-25T08:05:00.000Z'));
    expect(await monitorOnce(at, config, { clock: clockAt('2026-11-25T08:06:00Z') })).toMatchObject(
      { action: 'ok' },
    );
    // 50%: back to opus, through the same switch as `handoff switch` (the resume note's fields).
    await recordUsage(at, 'opus', report(50, '2026-11-25T08:07:00.000Z'));
    const action = await monitorOnce(at, config, { clock: clockAt('2026-11-25T08:08:00Z') });
    expect(action).toMatchObject({
      action: 'switched-back',
      from: 'codex',
      usage: 50,
      source: 'claude-code-statusline',
    });
    expect(readHandoff(at)).toMatchObject({
      author: 'opus',
      model: {
        current: 'opus',
        previous: 'codex',
        switch_reason: 'switch_back: opus at 50% (claude-code-statusline)',
      },
      task: { description: 'Billing' },
      context: { next_steps: ['Backfill'] },
    });
  });

  it("returns once the primary's exhausted window has reset, with no new report", async () => {
    const at = paths();
    await heartbeat(at, { model: 'opus' }, { now: new Date('2026-11-25T08:00:00Z') });
    await recordUsage(
      at,
      'opus',
      report(98, '2026-11-25T08:01:00.000Z', '2026-11-25T10:00:00.000Z'),
    );
    await monitorOnce(at, config, { clock: clockAt('2026-11-25T08:02:00Z') });
    await heartbeat(
      at,
      { model: 'codex', usagePercent: 10 },
      { now: new Date('2026-11-25T09:59:00Z') },
    );
    expect(await monitorOnce(at, config, { clock: clockAt('2026-11-25T09:59:30Z') })).toMatchObject(
      { action: 'ok' },
    );
    expect(await monitorOnce(at, config, { clock: clockAt('2026-11-25T10:00:00Z') })).toMatchObject(
      { action: 'switched-back', usage: 0 },
    );
    expect(readHandoff(at)?.model.current).toBe('opus');
  });
});
