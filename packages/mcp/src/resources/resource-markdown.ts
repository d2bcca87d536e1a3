import type { ContextItem } from '@ctxbus/core/contract';
import { itemBody, itemHeadline, toItemView } from '../item-view.js';

const BODY_CHARS = 800;

function entry(item: ContextItem, label?: string): string {
  const view = toItemView(item);
  const head = label ? `**${label}**: ${itemHeadline(view)}` : itemHeadline(view);
  const body = itemBody(view, BODY_CHARS);
  return body ? `- ${head}\n${body}` : `- ${head}`;
}

export function activeTasksMarkdown(tasks: readonly ContextItem[]): string {
  if (tasks.length === 0) return '# Active tasks\n\nNo active tasks.\n';
  const lines = tasks.map((item) => entry(item, item.scopeKey?.slice('task:'.length)));
  return `# Active tasks\n\nThe newest status of each open task, newest first.\n\n${lines.join('\n')}\n`;
}

export function recentDecisionsMarkdown(decisions: readonly ContextItem[]): string {
  if (decisions.length === 0) return '# Recent decisions\n\nNo decisions yet.\n';
  const lines = decisions.map((item) => entry(item));
  return `# Recent decisions\n\nNewest first; replaced decisions are left out.\n\n${lines.join('\n')}\n`;
}
