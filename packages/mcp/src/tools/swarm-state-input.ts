import type { BlackboardRef } from '@ctxbus/core/contract';
import {
  BLACKBOARD_ENTRY_KINDS,
  blackboardEntryNameSchema,
  boardListValueSchema,
  LIMITS,
  notePrioritySchema,
  tagSchema,
  visibilitySchema,
} from '@ctxbus/core/contract';
import { z } from 'zod';

// The input of update_swarm_shared_state: seed 004's (key, value), plus element-wise changes
// of the board's fields (add, remove), the board, and who may see what it writes.

/** The team's shared board, when a call names none. */
export const DEFAULT_BOARD: BlackboardRef = { scope: 'space', id: 'swarm' };

/** An object that refuses keys it does not take, naming the ones it does. */
function strictShape<T extends z.core.$ZodLooseShape>(name: string, shape: T) {
  const known = Object.keys(shape).join(', ');
  return z.strictObject(shape, {
    error: (issue) =>
      issue.code === 'unrecognized_keys' ? `${name} takes only ${known}` : undefined,
  });
}

const entryName = blackboardEntryNameSchema;
const listValues = z.array(boardListValueSchema).min(1).max(100);
const names = z.array(entryName).min(1).max(100);

export const noteInput = z.union(
  [
    z.string().trim().min(1).max(LIMITS.contentChars),
    z.strictObject({
      id: entryName.optional().describe('Its id (an entry name); a fresh one when absent.'),
      content: z.string().trim().min(1).max(LIMITS.contentChars),
      tags: z.array(tagSchema).max(10).optional(),
      priority: notePrioritySchema.optional(),
      // A note as the board returns it can be written back: who wrote it and when are the
      // hub's to say (the writer's runtime, the time of the write), so these are ignored.
      createdBy: z.string().max(200).optional().describe('Ignored: the writer is the caller.'),
      createdAt: z.string().max(100).optional().describe('Ignored: the hub stamps the time.'),
    }),
  ],
  {
    error:
      'a note is text, or {content, tags (up to 10), priority (low, medium or high), id (letters, digits, . _ -)}; createdBy and createdAt are taken and ignored',
  },
);
export type NoteArgument = z.output<typeof noteInput>;

const listFieldDescriptions = {
  resourceIds: 'Ids of resources made (resource_manage names).',
  createdUrls: 'URLs created or found.',
  activeRoutines: 'Routines running now.',
  completedTasks: 'Tasks finished.',
};

export const addInput = strictShape('add', {
  sharedNotes: z
    .array(noteInput)
    .min(1)
    .max(50)
    .optional()
    .describe('Notes: text, or {content, tags, priority: low|medium|high, id}.'),
  taskResults: z
    .record(entryName, z.unknown())
    .optional()
    .describe('Results by name: {"build": {"ok": true}}.'),
  resourceIds: listValues.optional().describe(listFieldDescriptions.resourceIds),
  createdUrls: listValues.optional().describe(listFieldDescriptions.createdUrls),
  activeRoutines: listValues.optional().describe(listFieldDescriptions.activeRoutines),
  completedTasks: listValues.optional().describe(listFieldDescriptions.completedTasks),
});
export type AddArgument = z.output<typeof addInput>;

export const removeInput = strictShape('remove', {
  entries: names.optional().describe('Entries by name (any kind).'),
  sharedNotes: names.optional().describe('Notes by id.'),
  taskResults: names.optional().describe('Results by name.'),
  resourceIds: listValues.optional(),
  createdUrls: listValues.optional(),
  activeRoutines: listValues.optional(),
  completedTasks: listValues.optional(),
});
export type RemoveArgument = z.output<typeof removeInput>;

export const swarmStateInput = z.object({
  board: z
    .string()
    .regex(
      /^((thread|space):)?[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/,
      'a board is "thread:<id>", "space:<id>" or an id (letters, digits, . _ -)',
    )
    .optional()
    .describe(
      `Which board: "thread:<id>" (a conversation's), "space:<id>", or an id (a space board). Default "${DEFAULT_BOARD.id}", the team's shared board.`,
    ),
  key: z
    .string()
    .min(1)
    .max(100)
    .optional()
    .describe(
      'Seed form: an entry name to set (a task result unless kind says otherwise), or a board field to replace: taskResults, sharedNotes, resourceIds, createdUrls, activeRoutines, completedTasks.',
    ),
  value: z
    .unknown()
    .optional()
    .describe('The JSON value for key (a board field: its whole new value).'),
  kind: z
    .enum(BLACKBOARD_ENTRY_KINDS)
    .optional()
    .describe('With an entry key: what it is (default "result").'),
  add: addInput.optional().describe('Adds to fields without replacing what others added.'),
  remove: removeInput.optional().describe('Removes entries, notes, results or list values.'),
  visibility: visibilitySchema
    .optional()
    .describe('"team" (default) or "private": only your runtime sees what this call writes.'),
});
export type SwarmStateArguments = z.output<typeof swarmStateInput>;

/** The board a `board` argument names. */
export function boardRef(board: string | undefined): BlackboardRef {
  if (board === undefined) return DEFAULT_BOARD;
  const [scope, id] = board.includes(':') ? board.split(':', 2) : ['space', board];
  return { scope: scope as BlackboardRef['scope'], id: id as string };
}
