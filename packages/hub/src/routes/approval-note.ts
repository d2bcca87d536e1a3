import { shownJson, TASK_LIMITS } from '@ctxbus/core';

/**
 * The note the hub gives a task that waits for approval: the command and its directory, shown
 * as every approval surface shows them, cut to a note's length (the whole command is the
 * approval's request). Uncut, a long command made the note too long and the request failed.
 */
export function approvalNote(argv: readonly string[], cwd: string, suffix = ''): string {
  const note = `approve or deny: ${shownJson(argv)} in ${shownJson(cwd)}${suffix}`;
  if (note.length <= TASK_LIMITS.noteChars) return note;
  const tail = ` … (cut: the command is ${note.length} characters; read it whole in the task's approval request)`;
  return `${note.slice(0, TASK_LIMITS.noteChars - tail.length)}${tail}`;
}
