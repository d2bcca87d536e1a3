import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { removeDir, tempDir } from '@ctxbus/test-kit';
import { afterAll, describe, expect, it } from 'vitest';
import { parseHandoffConfig } from './handoff-config.js';
import { readHandoff } from './handoff-file.js';
import { monitorOnce } from './handoff-monitor.js';
import type { Clock, SwitchResult } from './handoff-ops.js';
import { heartbeat } from './handoff-ops.js';
import { handoffPaths } from './handoff-paths.js';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) removeDir(dir);
});
const paths = () => {
  const dir = tempDir('ctxbus-handoff-monitor-');
  dirs.push(dir);
  return handoffPaths(dir);
};
const config = parseHandoffConfig(`
models: { primary: opus, secondary: codex, tertiary: gemini }
thresholds: { switch_to_secondary: 95, proactive_summary: 80 }
safety: { max_wait_seconds: 30 }
`);
/** Time stands still unless the monitor waits; each wait moves it on. */
function clockAt(iso: string, onSleep: () => Promise<void> | void = () => {}): Clock {
  let now = Date.parse(iso);
  return {
    now: () => new Date(now),
    sleep: async (ms) => {
      now += ms;
      await onSleep();
    },
  };
}

describe('heartbeats and the proactive summary', () => {
  it('writes rolling-summary.md from the threshold on, not below', async () => {
    const at = handoffPaths(tempDir('ctxbus-handoff-summary-'));
    dirs.push(at.dir.replace(/\/\.context-bus$/, ''));
    await heartbeat(at, { model: 'opus', usagePercent: 79 }, { summaryAtPercent: 80 });
    expect(existsSync(at.summary)).toBe(false);
    await heartbeat(
      at,
      {
        model: 'opus',
        usagePercent: 80,
        task: { description: 'Billing migration' },
        actions: ['Migrated invoices'],
        nextSteps: ['Backfill'],
        blockers: ['Waiting for DBA'],
      },
      { summaryAtPercent: 80, now: new Date('2026-11-25T08:00:00Z') },
    );
    const summary = readFileSync(at.summary, 'utf8');
    expect(summary).toMatch(
      /^---\nschema_version: 2\ngenerated: 2026-11-25T08:00:00.000Z\nauthor: opus\n/,
    );
    expect(summary).toContain('## TL;DR\nBilling migration [in_progress]\n');
    expect(summary).toContain('## Current Focus\nopus at 80% of its limit.\n');
    expect(summary).toContain('## Recent Progress\n- Migrated invoices\n');
    expect(summary).toContain('## Immediate Next Steps\n1. Backfill\n');
    expect(summary).toContain('## Open Items\n- Waiting for DBA\n');
  });
});

describe('the monitor, one pass', () => {
  it('does nothing without a handoff or below the thresholds', async () => {
    const at = paths();
    expect(await monitorOnce(at, config)).toEqual({
      action: 'none',
      reason: `no handoff in ${at.dir}`,
    });
    await heartbeat(at, { model: 'opus' });
    expect(await monitorOnce(at, config)).toMatchObject({ action: 'none' });
    await heartbeat(at, { model: 'opus', usagePercent: 50 });
    expect(await monitorOnce(at, config)).toMatchObject({ action: 'ok' });
    expect(existsSync(at.summary)).toBe(false);
  });

  it('prepares the summary at the proactive threshold', async () => {
    const at = paths();
    await heartbeat(at, { model: 'opus', usagePercent: 85 });
    expect(await monitorOnce(at, config)).toMatchObject({ action: 'prepared' });
    expect(readFileSync(at.summary, 'utf8')).toContain('opus at 85% of its limit');
    expect(readHandoff(at)?.model.current).toBe('opus');
  });

  it('switches to the next model at the switch threshold, without waiting when the handoff is ready', async () => {
    const at = paths();
    const start = '2026-11-25T08:00:00Z';
    await heartbeat(at, { model: 'opus', usagePercent: 96 }, { now: new Date(start) });
    const action = await monitorOnce(at, config, { clock: clockAt(start) });
    expect(action).toMatchObject({
      action: 'switched',
      from: 'opus',
      usage: 96,
      result: {
        warnings: [],
        finalHeartbeat: 'not-needed',
        handoff: { model: { current: 'codex', previous: 'opus' } },
      },
    });
    expect(readHandoff(at)?.model.switch_reason).toBe('auto_threshold: opus at 96%');
    // codex reports its own usage later; at the threshold again it moves on to gemini.
    await heartbeat(at, { model: 'codex', usagePercent: 97 }, { now: new Date(start) });
    expect(await monitorOnce(at, config, { clock: clockAt(start) })).toMatchObject({
      action: 'switched',
      from: 'codex',
    });
    await heartbeat(at, { model: 'gemini', usagePercent: 99 }, { now: new Date(start) });
    expect(await monitorOnce(at, config, { clock: clockAt(start) })).toEqual(
      expect.objectContaining({
        action: 'stuck',
        reason: 'gemini is at 99% and no model is configured after it',
      }),
    );
  });

  it("switches a handoff seed 003's scripts wrote (its checksum ours cannot match) anyway, with its content, and says so", async () => {
    const at = paths();
    const start = '2026-11-25T08:00:00Z';
    await heartbeat(
      at,
      {
        model: 'opus',
        usagePercent: 97,
        task: { description: 'Billing migration' },
        nextSteps: ['Backfill'],
      },
      { now: new Date(start) },
    );
    // As the seed's write_handoff leaves it: its own checksum, over bytes not in the file.
    const written = JSON.parse(readFileSync(at.handoff, 'utf8'));
    writeFileSync(at.handoff, JSON.stringify({ ...written, checksum: 'sha256:0123abcd' }, null, 2));
    expect(() => readHandoff(at)).toThrow(/fails its checksum/);
    const action = await monitorOnce(at, config, { clock: clockAt(start) });
    expect(action).toMatchObject({ action: 'switched', from: 'opus', usage: 97 });
    const switched = readHandoff(at);
    expect(switched?.model).toMatchObject({ current: 'codex', previous: 'opus' });
    expect(switched?.task.description).toBe('Billing migration');
    expect(switched?.context.next_steps).toEqual(['Backfill']);
    expect((action as { result: SwitchResult }).result.warnings).toContain(
      'the handoff fails its checksum: handed over as it is, unverified',
    );
  });

  it('an incomplete handoff: asks for a final heartbeat, waits the configured time, switches anyway and says so', async () => {
    const at = paths();
    await heartbeat(
      at,
      { model: 'opus', usagePercent: 96, ready: false },
      { now: new Date('2026-11-25T08:00:00Z') },
    );
    let requested = false;
    const clock = clockAt('2026-11-25T08:00:10Z', () => {
      requested ||= existsSync(at.heartbeatRequest);
    });
    const action = await monitorOnce(at, config, { clock, pollMs: 10_000 });
    expect(requested).toBe(true);
    expect(clock.now().toISOString()).toBe('2026-11-25T08:00:40.000Z');
    expect(action).toMatchObject({ action: 'switched', result: { finalHeartbeat: 'timed-out' } });
    expect(readHandoff(at)?.model.switch_reason).toBe(
      'auto_threshold: opus at 96% (incomplete handoff)',
    );
  });
});
