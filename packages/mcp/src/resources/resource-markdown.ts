import type { ContextItem } from '@ctxbus/core/contract';
import { itemBody, itemHeadline, toItemView } from '../item-view.js';
import { taskHeadline, toTaskView } from '../task-view.js';
import type { ActiveTasks } from './active-tasks.js';
import { ACTIVE_TASK_LIMIT } from './active-tasks.js';

const BODY_CHARS = 800;

function entry(item: ContextItem, label?: string): string {
  const view = toItemView(item);
  const head = label ? `**${label}**: ${itemHeadline(view)}` : itemHeadline(view);
  const body = itemBody(view, BODY_CHARS);
  return body ? `- ${head}\n${body}` : `- ${head}`;
}

export function activeTasksMarkdown({ tasks, otherStatus }: ActiveTasks): string {
  if (tasks.length === 0 && otherStatus.length === 0) return '# Active tasks\n\nNo active tasks.\n';
  const parts = ['# Active tasks\n'];
  if (tasks.length > 0) {
    const lines = tasks.map((task) => {
      const view = toTaskView(task);
      const reason = typeof task.routing?.reason === 'string' ? `; ${task.routing.reason}` : '';
      return `- ${taskHeadline(view)}\n  Needs ${task.requiredCapabilities.join(', ')}; from ${task.origin}; attempt ${task.attempts} of ${task.maxAttempts}; updated ${task.updatedAt}${reason}`;
    });
    parts.push(
      `The team's open tasks (SUBMITTED, WORKING, INPUT_REQUIRED, AUTH_REQUIRED), newest first${tasks.length >= ACTIVE_TASK_LIMIT ? ` (the newest ${ACTIVE_TASK_LIMIT})` : ''}. Details: task_status.\n\n${lines.join('\n')}\n`,
    );
  } else {
    parts.push('No open tasks in the task store.\n');
  }
  if (otherStatus.length > 0) {
    const lines = otherStatus.map((item) => entry(item, item.scopeKey?.slice('task:'.length)));
    parts.push(
      `## Other task status\n\nThe newest status agents wrote about their own tasks (scope key task:<id>), newest first.\n\n${lines.join('\n')}\n`,
    );
  }
  return parts.join('\n');
}

export function recentDecisionsMarkdown(decisions: readonly ContextItem[]): string {
  if (decisions.length === 0) return '# Recent decisions\n\nNo decisions yet.\n';
  const lines = decisions.map((item) => entry(item));
  return `# Recent decisions\n\nNewest first; replaced decisions are left out.\n\n${lines.join('\n')}\n`;
}
