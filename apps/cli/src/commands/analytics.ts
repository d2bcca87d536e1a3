import { createClient } from '@ctxbus/client';
import type { AnalyticsItem, AnalyticsResponse } from '@ctxbus/core/contract';
import { hubUrl, runtimeToken } from '../hub-target.js';

// `ctxbus analytics`: the hub client side and the report's lines, loaded when the command runs.

export interface AnalyticsQueryFlags {
  window?: number;
  runtime?: string;
  limit?: number;
  staleDays?: number;
}

export function fetchAnalytics(
  connection: { url?: string; token?: string },
  query: AnalyticsQueryFlags,
): Promise<AnalyticsResponse> {
  const url = hubUrl(connection.url);
  const client = createClient({ url, token: runtimeToken(url, connection.token) });
  return client.call('contextAnalytics', { query });
}

const itemText = (item: AnalyticsItem) =>
  `${item.type} ${item.title} (${item.sourceRuntime}${item.visibility === 'private' ? ', private' : ''}) ${item.id}`;

const countsText = (row: { injected: number; consumed: number; searched: number }) =>
  `injected ${row.injected}, consumed ${row.consumed}, searched ${row.searched}`;

/** The report as text: per runtime, per day, then the item lists. */
export function analyticsLines(report: AnalyticsResponse): string[] {
  const who = report.runtime ? ` by ${report.runtime}` : '';
  const lines = [
    `Context use${who}, ${report.window.from} to ${report.window.to} (${report.window.days} days, UTC): ${countsText(report.totals)}`,
    '',
    'Per runtime:',
  ];
  if (report.runtimes.length === 0) lines.push('  (no use recorded)');
  for (const row of report.runtimes) {
    lines.push(
      `  ${row.runtime.padEnd(14)} ${countsText(row)}; ${row.items} item${row.items === 1 ? '' : 's'}`,
    );
  }
  lines.push('', 'Per day:');
  for (const day of report.daily) {
    const runtimes = day.runtimes.map(
      (row) => `${row.runtime} ${row.injected}/${row.consumed}/${row.searched}`,
    );
    lines.push(
      `  ${day.day}  ${countsText(day)}${runtimes.length ? `  (${runtimes.join(', ')})` : ''}`,
    );
  }
  lines.push('', 'Most used:');
  if (report.topItems.length === 0) lines.push('  (none)');
  for (const row of report.topItems) {
    lines.push(`  ${countsText(row)}  ${itemText(row.item)}`);
  }
  lines.push('', `Never used (${report.neverUsed.total}):`);
  if (report.neverUsed.total === 0) lines.push('  (none)');
  for (const row of report.neverUsed.items)
    lines.push(`  ${row.ageDays} days old  ${itemText(row.item)}`);
  lines.push('', `Stale (${report.stale.total}): ${report.staleRule.text}`);
  if (report.stale.total === 0) lines.push('  (none)');
  for (const row of report.stale.items) {
    const last = row.lastUsedAt ? `last used ${row.lastUsedAt.slice(0, 10)}` : 'never used';
    lines.push(`  idle ${row.idleDays} days, ${last}  ${itemText(row.item)}`);
  }
  const listed = report.neverUsed.items.length + report.stale.items.length;
  if (listed < report.neverUsed.total + report.stale.total) {
    lines.push('', '(lists cut at --limit; --json for all the fields)');
  }
  return lines;
}
