import { CtxbusError } from '@ctxbus/core/contract';
import type { HandoffConfig } from './handoff-config.js';
import { nextModel } from './handoff-config.js';
import { readHandoff, readHandoffUnchecked } from './handoff-file.js';
import { readHistory } from './handoff-history.js';
import type { Clock, SwitchResult } from './handoff-ops.js';
import { summaryOf, switchModel, systemClock, writeRollingSummary } from './handoff-ops.js';
import type { HandoffPaths } from './handoff-paths.js';
import type { Handoff } from './handoff-schema.js';
import type { CurrentUsage, UsageSource } from './runtime-usage.js';
import { currentUsage, readUsageReports, usageSince } from './runtime-usage.js';

// Seed 003's background monitor, one pass: read the usage (the runtime's report where it gives
// one, else the agent's heartbeat) and act at config.yaml's thresholds. Run it from cron, a
// systemd timer or launchd (`ctxbus handoff monitor --install`), or in a loop.

export type MonitorAction =
  | { action: 'none'; reason: string }
  | { action: 'ok'; handoff: Handoff; usage: CurrentUsage }
  | { action: 'prepared'; handoff: Handoff; usage: CurrentUsage }
  | {
      action: 'switched';
      from: string;
      usage: number;
      source: CurrentUsage['source'];
      result: SwitchResult;
    }
  | {
      action: 'switched-back';
      from: string;
      /** The primary's usage that allowed it (at or below `switch_back`). */
      usage: number;
      source: UsageSource;
      result: SwitchResult;
    }
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

/** When the current model became current (ms): the last switch in the history, else never. */
export function currentSince(paths: HandoffPaths): number {
  const last = readHistory(paths)
    .filter((entry) => entry.event === 'switch')
    .at(-1);
  return last ? Date.parse(last.timestamp) : Number.NEGATIVE_INFINITY;
}

/** The handoff, checked; one failing only its checksum is read unchecked and marked so. */
function readForMonitor(paths: HandoffPaths): { handoff: Handoff | null; unverified: boolean } {
  try {
    return { handoff: readHandoff(paths), unverified: false };
  } catch (error) {
    const reason = CtxbusError.isInstance(error)
      ? (error.details as { reason?: string } | undefined)?.reason
      : undefined;
    if (reason !== 'checksum') throw error;
    return { handoff: readHandoffUnchecked(paths), unverified: true };
  }
}

/**
 * One look at the handoff. Away from the primary model, once the primary's runtime reports it
 * at or below `switch_back` (or its window has reset), the agent switches back to it. Else, at
 * `switch_to_secondary` the agent moves to the next model (after asking for a final heartbeat;
 * an incomplete handoff switches anyway, with warnings, and its switch reason says so); at
 * `proactive_summary` rolling-summary.md is prepared; below, nothing. A handoff that fails only
 * its checksum (seed 003's own scripts wrote it) is read and handed over as it is, with a
 * warning, as the seed's monitor would; one that is not a handoff at all throws.
 */
export async function monitorOnce(
  paths: HandoffPaths,
  config: HandoffConfig,
  options: MonitorOptions = {},
): Promise<MonitorAction> {
  const clock = options.clock ?? systemClock;
  const { handoff, unverified } = readForMonitor(paths);
  if (!handoff) return { action: 'none', reason: `no handoff in ${paths.dir}` };
  const now = clock.now();
  const reports = readUsageReports(paths);
  const since = currentSince(paths);
  const switchOptions = {
    ...switchSafety(config),
    force: true,
    ...(unverified && { adopt: true }),
    clock,
    ...(options.pollMs !== undefined && { pollMs: options.pollMs }),
  };
  const from = handoff.model.current;
  if (from !== config.models.primary) {
    // Only the runtime's word counts here: no heartbeat speaks for a model the agent left.
    const primary = usageSince(reports[config.models.primary], since, now);
    if (primary && primary.percent <= config.thresholds.switch_back) {
      const result = await switchModel(paths, {
        to: config.models.primary,
        reason: `switch_back: ${config.models.primary} at ${primary.percent}% (${primary.source})`,
        ...switchOptions,
      });
      return {
        action: 'switched-back',
        from,
        usage: primary.percent,
        source: primary.source,
        result,
      };
    }
  }
  const usage = currentUsage(handoff, reports, since, now);
  if (usage === null) return { action: 'none', reason: 'no usage reported yet' };
  if (usage.percent >= config.thresholds.switch_to_secondary) {
    const to = nextModel(config, from);
    if (!to) {
      return {
        action: 'stuck',
        handoff,
        reason: `${from} is at ${usage.percent}% and no model is configured after it`,
      };
    }
    const result = await switchModel(paths, {
      to,
      reason: `auto_threshold: ${from} at ${usage.percent}%${usage.source === 'agent' ? '' : ` (${usage.source})`}`,
      ...switchOptions,
    });
    return { action: 'switched', from, usage: usage.percent, source: usage.source, result };
  }
  if (usage.percent >= config.thresholds.proactive_summary) {
    writeRollingSummary(paths, summaryOf(handoff), now);
    return { action: 'prepared', handoff, usage };
  }
  return { action: 'ok', handoff, usage };
}
