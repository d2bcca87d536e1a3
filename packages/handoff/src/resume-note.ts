import type { Handoff } from './handoff-schema.js';

/** What the resuming model is told first (seed 003: "Continuing from X's work on ..."). */
export function resumeNote(handoff: Handoff): string | null {
  if (!handoff.model.previous) return null;
  // A handoff that never had a task holds the placeholder "not started" (handoff init): "work
  // on not started" would read as a task of that name.
  const placeholder =
    handoff.task.status === 'not_started' && handoff.task.description === 'not started';
  const task =
    placeholder || !handoff.task.description ? 'the current task' : handoff.task.description;
  const lines = [
    `Continuing from ${handoff.model.previous}'s work on ${task}${handoff.model.switch_reason ? ` (switched: ${handoff.model.switch_reason})` : ''}.`,
  ];
  const list = (title: string, items: string[]) => {
    if (items.length) lines.push(`${title}:`, ...items.map((item) => `- ${item}`));
  };
  list('Recent actions', handoff.context.recent_actions);
  list('Decisions', handoff.context.decisions);
  list('Next steps', handoff.context.next_steps);
  list('Blockers', handoff.context.blockers);
  return lines.join('\n');
}
