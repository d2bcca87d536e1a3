import { spawnSync } from 'node:child_process';
import { CtxbusError } from '@ctxbus/core/light';
import type { HandoffConfig, HandoffPaths, UsageReport } from '@ctxbus/handoff';
import {
  parseClaudeStatusLine,
  parseOpenClawStatus,
  readHandoff,
  recordUsage,
  usageFromClaudeStatusLine,
  usageFromOpenClawStatus,
} from '@ctxbus/handoff';

// Usage from the runtimes, into `.context-bus/usage.json`: Claude Code's status line command
// (`ctxbus handoff statusline`) and OpenClaw's `openclaw status --usage --json`.

/** The model a report is filed under: `--model`, else the handoff's current, else the primary. */
export function reportModel(paths: HandoffPaths, config: HandoffConfig, model?: string): string {
  if (model) return model;
  try {
    return readHandoff(paths)?.model.current ?? config.models.primary;
  } catch {
    return config.models.primary;
  }
}

function percentText(report: UsageReport | null): string {
  return report
    ? `${Math.round(report.usage_percent)}% ${report.window ?? ''}`.trim()
    : 'no plan usage reported';
}

/**
 * Claude Code's status line command: records the plan usage its stdin reports and answers the
 * line to show. Claude Code blanks the line on a failure, so a problem becomes the line.
 */
export async function statusLine(
  stdin: string,
  paths: HandoffPaths,
  config: HandoffConfig,
  model: string | undefined,
  now = new Date(),
): Promise<string> {
  try {
    const input = parseClaudeStatusLine(stdin);
    const report = usageFromClaudeStatusLine(input, now);
    const name = model ?? config.models.primary;
    if (report) await recordUsage(paths, name, report);
    const context = input.context_window?.used_percentage;
    const parts = [
      `${name}: ${percentText(report)}`,
      ...(typeof context === 'number' ? [`context ${Math.round(context)}%`] : []),
      `switch at ${config.thresholds.switch_to_secondary}%`,
    ];
    return `ctxbus handoff · ${parts.join(' · ')}`;
  } catch (error) {
    return `ctxbus handoff: ${(error as Error).message}`;
  }
}

/** The OpenClaw command: `$CTXBUS_OPENCLAW`, else `openclaw` on PATH. */
function openClawCommand(env: NodeJS.ProcessEnv): string {
  return env.CTXBUS_OPENCLAW || 'openclaw';
}

/**
 * Asks OpenClaw for its providers' usage (`openclaw status --usage --json`) and records the
 * busiest window of `provider` (default: the first with windows) for `model`. Null when
 * OpenClaw reports no usage window (no subscription credentials, an error).
 */
export async function collectOpenClawUsage(
  paths: HandoffPaths,
  model: string,
  provider: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Promise<UsageReport | null> {
  const command = openClawCommand(env);
  const result = spawnSync(command, ['status', '--usage', '--json'], {
    encoding: 'utf8',
    env,
    timeout: 120_000,
    maxBuffer: 32 * 1024 * 1024,
  });
  if ((result.error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT') {
    throw new CtxbusError('not_found', `${command} is not installed (or set CTXBUS_OPENCLAW)`);
  }
  if (result.status !== 0) {
    const said = (result.stderr ?? '').trim().split('\n').at(-1) ?? '';
    throw new CtxbusError(
      'internal',
      `openclaw status --usage --json failed: ${said || `exit code ${result.status}`}`,
    );
  }
  const report = usageFromOpenClawStatus(parseOpenClawStatus(result.stdout), new Date(), provider);
  if (report) await recordUsage(paths, model, report);
  return report;
}

export function describeReport(model: string, report: UsageReport | null): string {
  if (!report) return `${model}: the runtime reported no usage window; nothing recorded`;
  return `${model}: ${report.usage_percent}% (${report.window ?? 'usage'}${report.resets_at ? `, resets ${report.resets_at}` : ''}) from ${report.source}`;
}
