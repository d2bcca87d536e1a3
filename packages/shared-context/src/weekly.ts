import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { ContextItemInput } from '@ctxbus/core/contract';
import { stableId } from '@ctxbus/core/light';
import { bootstrapSharedContext } from './bootstrap.js';
import { detectCrossSignals } from './cross-signals.js';
import type { FeedbackEntry } from './feedback.js';
import { readFeedbackFile } from './feedback.js';
import { policyWrite } from './files.js';
import { listAgentOutputs } from './outputs.js';
import type { SharedContextPaths } from './paths.js';
import { assertAgentId, isoDate, isoWeek, isoWeekRange } from './paths.js';

export interface WeeklyOptions {
  now: Date;
  agent?: string;
}

export interface WeeklyResult {
  week: string;
  relPath: string;
  markdown: string;
  /** Items to promote to the bus (`client.write(items)`): idempotent ids, key per week. */
  items: ContextItemInput[];
}

function feedbackOfWeek(
  paths: SharedContextPaths,
  week: string,
  start: Date,
  end: Date,
): FeedbackEntry[] {
  const seen = new Set<string>();
  const entries: FeedbackEntry[] = [];
  for (const file of [paths.feedbackWeekFile(week), join(paths.feedback, 'inbox.jsonl')]) {
    for (const { entry, line } of readFeedbackFile(file).entries) {
      const time = Date.parse(entry.timestamp);
      if (seen.has(line) || time < start.getTime() || time >= end.getTime()) continue;
      seen.add(line);
      entries.push(entry);
    }
  }
  return entries.sort(
    (a, b) => a.timestamp.localeCompare(b.timestamp) || a.subject.localeCompare(b.subject),
  );
}

function feedbackLine(entry: FeedbackEntry): string {
  const reason = entry.reason ? `: ${entry.reason.replace(/\s+/g, ' ')}` : '';
  const ref = entry.ref ? ` (${entry.ref})` : '';
  return `- **${entry.subject}** _(${entry.verdict} by ${entry.agent}, ${entry.timestamp.slice(0, 10)})_${reason}${ref}`;
}

/**
 * The weekly compound (seed 001, component E): "what worked / what didn't" from the ISO
 * week's feedback (approved / rejected), the week's outputs per agent and its recurring
 * cross-signals, written to `roundtable/weekly-<YYYY-Www>.md`. Returns the text and one keyed
 * item (`shared-context/weekly/<YYYY-Www>`) the caller may promote to the bus.
 */
export async function weeklyCompound(
  paths: SharedContextPaths,
  options: WeeklyOptions,
): Promise<WeeklyResult> {
  const agent = assertAgentId(options.agent ?? 'curator');
  bootstrapSharedContext(paths);
  const week = isoWeek(options.now);
  const { start, end } = isoWeekRange(options.now);
  const feedback = feedbackOfWeek(paths, week, start, end);
  const worked = feedback.filter((entry) => entry.verdict === 'approved');
  const didNot = feedback.filter((entry) => entry.verdict === 'rejected');
  const outputs = listAgentOutputs(paths, { from: start, to: end });
  const byAgent = new Map<string, string[]>();
  for (const output of outputs)
    byAgent.set(output.agent, [...(byAgent.get(output.agent) ?? []), output.title]);
  const signals = await detectCrossSignals(paths, {
    now: new Date(Math.min(end.getTime() - 1, options.now.getTime())),
    windowDays: 7,
    write: false,
  });
  const lastDay = new Date(end.getTime() - 86_400_000);
  const lines = [
    `# Weekly compound ${week}`,
    '',
    `_${isoDate(start)} to ${isoDate(lastDay)} (UTC): ${feedback.length} feedback entries, ${outputs.length} outputs._`,
    '',
    '## What worked',
    ...(worked.length > 0 ? worked.map(feedbackLine) : ['- (no approvals recorded)']),
    '',
    "## What didn't",
    ...(didNot.length > 0 ? didNot.map(feedbackLine) : ['- (no rejections recorded)']),
    '',
    '## Outputs this week',
    ...(byAgent.size > 0
      ? [...byAgent.entries()]
          .sort((a, b) => a[0].localeCompare(b[0]))
          .map(([name, titles]) => `- **${name}** (${titles.length}): ${titles.join('; ')}`)
      : ['- (no outputs)']),
    '',
    '## Recurring signals',
    ...(signals.signals.length > 0
      ? signals.signals
          .slice(0, 10)
          .map(
            (signal) =>
              `- **${signal.label}**: ${signal.agents.join(', ')} (${signal.counts.files} files)`,
          )
      : ['- (none)']),
    '',
  ];
  const markdown = lines.join('\n');
  const relPath = `roundtable/weekly-${week}.md`;
  policyWrite(paths, relPath, markdown, { agent, mode: 'overwrite', curator: true });
  const key = `shared-context/weekly/${week}`;
  const hash = createHash('sha256').update(markdown).digest('hex');
  const items: ContextItemInput[] = [
    {
      id: stableId('shared-context', key, hash),
      type: 'discovery',
      key,
      title: `Weekly compound ${week}: what worked, what didn't`,
      content: markdown,
      summary: `${worked.length} approved, ${didNot.length} rejected, ${outputs.length} outputs in ${week}`,
      relevanceTags: ['shared-context', 'weekly-compound'],
    },
  ];
  return { week, relPath, markdown, items };
}
