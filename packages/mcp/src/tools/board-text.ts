import type { SwarmBlackboard } from '@ctxbus/core/contract';
import { sliceText } from '@ctxbus/core/contract';

// The text rendering of a board (the structured result holds all of it): one line per field,
// each value cut at VALUE_CHARS, so a busy board stays readable.

const VALUE_CHARS = 300;

function cut(text: string): string {
  return text.length > VALUE_CHARS ? `${sliceText(text, VALUE_CHARS)}…` : text;
}

function listLine(name: string, values: readonly string[]): string {
  return `${name}: ${values.length === 0 ? '(none)' : values.map(cut).join(', ')}`;
}

function noteLine(note: SwarmBlackboard['sharedNotes'][number]): string {
  const priority = note.priority ? `[${note.priority}] ` : '';
  const tags = note.tags.length > 0 ? ` #${note.tags.join(' #')}` : '';
  return `- ${priority}${cut(note.content)} (${note.id}, ${note.createdBy})${tags}`;
}

/** The board after a call, and what the call changed. */
export function renderBoard(board: SwarmBlackboard, changes: readonly string[]): string {
  const results = Object.entries(board.taskResults).map(
    ([name, value]) => `- ${name}: ${cut(JSON.stringify(value) ?? 'null')}`,
  );
  const updated = board.lastUpdated
    ? `last updated ${board.lastUpdated} by ${board.updatedBy}`
    : 'empty';
  return [
    ...(changes.length > 0 ? [`Changed: ${changes.join('; ')}`] : []),
    `Board ${board.board.scope}:${board.board.id} (${updated})`,
    `taskResults:${results.length === 0 ? ' (none)' : `\n${results.join('\n')}`}`,
    `sharedNotes:${board.sharedNotes.length === 0 ? ' (none)' : `\n${board.sharedNotes.map(noteLine).join('\n')}`}`,
    listLine('resourceIds', board.resourceIds),
    listLine('createdUrls', board.createdUrls),
    listLine('activeRoutines', board.activeRoutines),
    listLine('completedTasks', board.completedTasks),
  ].join('\n');
}
