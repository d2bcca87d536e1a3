import type { HandoffConfig } from './handoff-config.js';
import { nextModel } from './handoff-config.js';
import { readHandoff } from './handoff-file.js';
import type { Clock, SwitchResult } from './handoff-ops.js';
import {
  summaryDue,
  summaryOf,
  switchModel,
  systemClock,
  writeRollingSummary,
} from './handoff-ops.js';
import type { HandoffPaths } from './handoff-paths.js';
import type { Handoff } from './handoff-schema.js';

// Seed 003's background monitor, one pass: read the usage the agent's heartbeats report and act
// at config.yaml's thresholds. Run it from cron or a systemd timer (`ctxbus handoff monitor
// --once`), or in a loop.

export type MonitorAction =
  | { action: 'none'; reason: string }
  | { action: 'ok'; handoff: Handoff }
  | { action: 'prepared'; handoff: Handoff }
  | { action: 'switched'; from: string; usage: number; result: SwitchResult }
  | { action: 'stuck'; handoff: Handoff; reason: string };

export interface MonitorOptions {
  clock?: Clock;
  pollMs?: number;
}

/** What a switch asks of the handoff, from config.yaml's `safety`. */
export function switchSafety(config: HandoffConfig) {
  return {
    maxAgeMs: config.safety.max_handoff_age_minutes * 60_000,
    waitMs: config.safety.retry_on_incomplete ? config.safety.max_wait_seconds * 1_000 : 0,
    requireReady: config.safety.require_handoff_ready,
  };
}

/**
 * One look at the handoff: at `switch_to_secondary` the agent moves to the next model (after
 * asking for a final heartbeat; an incomplete handoff switches anyway, with warnings, and its
 * switch reason says so); at `proactive_summary` rolling-summary.md is prepared;
 * below, nothing. A damaged handoff throws (the switch would refuse it too).
 */
export async function monitorOnce(
  paths: HandoffPaths,
  config: HandoffConfig,
  options: MonitorOptions = {},
): Promise<MonitorAction> {
  const clock = options.clock ?? systemClock;
  const handoff = readHandoff(paths);
  if (!handoff) return { action: 'none', reason: `no handoff in ${paths.dir}` };
  const usage = handoff.model.usage_percent;
  if (usage === null) return { action: 'none', reason: 'no usage reported yet' };
  if (usage >= config.thresholds.switch_to_secondary) {
    const from = handoff.model.current;
    const to = nextModel(config, from);
    if (!to) {
      return {
        action: 'stuck',
        handoff,
        reason: `${from} is at ${usage}% and no model is configured after it`,
      };
    }
    const safety = switchSafety(config);
    const result = await switchModel(paths, {
      to,
      reason: `auto_threshold: ${from} at ${usage}%`,
      ...safety,
      force: true,
      clock,
      ...(options.pollMs !== undefined && { pollMs: options.pollMs }),
    });
    return { action: 'switched', from, usage, result };
  }
  if (summaryDue(handoff, config.thresholds.proactive_summary)) {
    writeRollingSummary(paths, summaryOf(handoff), clock.now());
    return { action: 'prepared', handoff };
  }
  return { action: 'ok', handoff };
}
