import { z } from 'zod';
import type { ContextItem } from '../items/context-item.js';
import { hashValue } from '../shared/canonical-hash.js';
import type { BlackboardEntryKind, BlackboardRef } from './blackboard-contract.js';
import {
  BLACKBOARD_ENTRY_KINDS,
  BLACKBOARD_TAG,
  blackboardRefSchema,
  itemValue,
  parseBlackboardKey,
  REMOVED_TAG,
  TEXT_VALUE_TAG,
} from './blackboard-contract.js';

/**
 * Seed 004's `SwarmBlackboard`, read off a board's live entries (pure: the entries come from
 * the bus). Each element of a list field is an entry of its own kind, so two agents adding to
 * one list never overwrite each other:
 *
 * - `taskResults`: entries of kind `result` (and entries of no known kind), by name;
 * - `sharedNotes`: entries of kind `note`, with the seed's note fields;
 * - `resourceIds`, `createdUrls`, `activeRoutines`, `completedTasks`: the values of entries
 *   of kind `resource-id`, `url`, `active-routine`, `completed-task`, oldest first;
 * - `lastUpdated` / `updatedBy`: the newest entry's time and writer.
 */

export const NOTE_PRIORITIES = ['low', 'medium', 'high'] as const;
export type NotePriority = (typeof NOTE_PRIORITIES)[number];
export const notePrioritySchema = z.enum(NOTE_PRIORITIES);

/** The tag a note's priority rides in (`priority:high`), so a listing can filter by it. */
export function priorityTag(priority: NotePriority): string {
  return `priority:${priority}`;
}

/** The seed's list fields and the entry kind each element is written as. */
export const BOARD_LIST_FIELDS = {
  resourceIds: 'resource-id',
  createdUrls: 'url',
  activeRoutines: 'active-routine',
  completedTasks: 'completed-task',
} as const satisfies Record<string, BlackboardEntryKind>;
export type BoardListField = keyof typeof BOARD_LIST_FIELDS;
export const BOARD_LIST_FIELD_NAMES = Object.keys(BOARD_LIST_FIELDS) as BoardListField[];

/** An element of a list field: a string (an id, a URL, a routine or task name). */
export const boardListValueSchema = z.string().trim().min(1).max(2_000);

/** The entry name of a list element: its kind and a hash of its value, so adding it twice is one entry. */
export function listEntryName(kind: BlackboardEntryKind, value: string): string {
  return `${kind}.${hashValue(value).slice(0, 16)}`;
}

export const blackboardNoteSchema = z.object({
  id: z.string(),
  content: z.string(),
  createdBy: z.string(),
  createdAt: z.iso.datetime({ offset: true }),
  tags: z.array(z.string()),
  priority: notePrioritySchema.optional(),
});
export type BlackboardNote = z.infer<typeof blackboardNoteSchema>;

export const swarmBlackboardSchema = z.object({
  board: blackboardRefSchema,
  taskResults: z.record(z.string(), z.unknown()),
  sharedNotes: z.array(blackboardNoteSchema),
  resourceIds: z.array(z.string()),
  createdUrls: z.array(z.string()),
  activeRoutines: z.array(z.string()),
  completedTasks: z.array(z.string()),
  lastUpdated: z.iso.datetime({ offset: true }).nullable(),
  updatedBy: z.string().nullable(),
});
export type SwarmBlackboard = z.infer<typeof swarmBlackboardSchema>;

/** Who wrote an item, as the board names writers: `runtime/agent`, or the runtime alone. */
export function writerOf(item: Pick<ContextItem, 'source'>): string {
  const { runtime, agentId } = item.source;
  return agentId ? `${runtime}/${agentId}` : runtime;
}

/** The entry kind an item carries (a tag), or undefined for an entry of no known kind. */
export function entryKindOf(
  item: Pick<ContextItem, 'relevanceTags'>,
): BlackboardEntryKind | undefined {
  return item.relevanceTags.find((tag): tag is BlackboardEntryKind =>
    (BLACKBOARD_ENTRY_KINDS as readonly string[]).includes(tag),
  );
}

const INTERNAL_TAGS = new Set<string>([
  BLACKBOARD_TAG,
  REMOVED_TAG,
  TEXT_VALUE_TAG,
  ...BLACKBOARD_ENTRY_KINDS,
]);

function noteOf(name: string, item: ContextItem): BlackboardNote {
  const value = itemValue(item);
  const priority = NOTE_PRIORITIES.find((level) => item.relevanceTags.includes(priorityTag(level)));
  return {
    id: name,
    content: typeof value === 'string' ? value : JSON.stringify(value),
    createdBy: writerOf(item),
    createdAt: item.createdAt,
    tags: item.relevanceTags.filter(
      (tag) => !INTERNAL_TAGS.has(tag) && !tag.startsWith('priority:'),
    ),
    ...(priority && { priority }),
  };
}

function emptyBoard(board: BlackboardRef): SwarmBlackboard {
  return {
    board,
    taskResults: {},
    sharedNotes: [],
    resourceIds: [],
    createdUrls: [],
    activeRoutines: [],
    completedTasks: [],
    lastUpdated: null,
    updatedBy: null,
  };
}

const LIST_FIELD_OF = Object.fromEntries(
  Object.entries(BOARD_LIST_FIELDS).map(([field, kind]) => [kind, field]),
) as Record<BlackboardEntryKind, BoardListField | undefined>;

/** Adds one live entry to the board view. */
function place(view: SwarmBlackboard, name: string, item: ContextItem): void {
  const kind = entryKindOf(item);
  const field = kind && LIST_FIELD_OF[kind];
  if (field) {
    const value = itemValue(item);
    view[field].push(typeof value === 'string' ? value : JSON.stringify(value));
  } else if (kind === 'note') view.sharedNotes.push(noteOf(name, item));
  else view.taskResults[name] = itemValue(item);
}

/**
 * The seed's board from the items of one board (any order; removal markers, other boards'
 * items and items that are no entries are skipped). Lists keep the order entries were written.
 */
export function swarmBlackboardOf(
  board: BlackboardRef,
  items: readonly ContextItem[],
): SwarmBlackboard {
  const view = emptyBoard(board);
  const sorted = [...items].sort((a, b) => a.seq - b.seq);
  for (const item of sorted) {
    const parsed = parseBlackboardKey(item.key);
    if (!parsed || item.relevanceTags.includes(REMOVED_TAG)) continue;
    if (parsed.board.scope !== board.scope || parsed.board.id !== board.id) continue;
    place(view, parsed.entry, item);
    view.lastUpdated = item.createdAt;
    view.updatedBy = writerOf(item);
  }
  return view;
}
