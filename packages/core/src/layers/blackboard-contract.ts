import { z } from 'zod';
import type { ChangeKind } from '../items/api-schemas.js';
import { CHANGE_EVENT_NAMES, streamEventNames } from '../items/api-schemas.js';
import type { ContextItem } from '../items/context-item.js';
import { contextItemSchema, memoryKeySchema } from '../items/context-item.js';
import { CtxbusError } from '../shared/errors.js';

/**
 * Seed 004's second and third layers ride on the bus's ordinary items, so that team isolation,
 * privacy, expiry, supersession, search and the stream apply to them unchanged:
 *
 * - a blackboard entry is a keyed item `blackboard/<thread|space>/<boardId>/<entry>` tagged
 *   `blackboard` (writing the same entry again supersedes it: the board holds latest values);
 * - a persistent resource is a keyed item `resource/<name>` tagged `resource`, with no expiry,
 *   found by the hub's search like any other item.
 *
 * The value of either is in the item's `content`: a string as it is (tagged `value:text`), any
 * other value as JSON.
 */

export const BLACKBOARD_TAG = 'blackboard';
export const RESOURCE_TAG = 'resource';
/** The tag of the marker that removes a key's value (`DELETE /api/context?key=`). */
export const REMOVED_TAG = 'removed';
/** The stream event a blackboard entry's change goes out as (SSE `?blackboard=true`). */
export const BLACKBOARD_EVENT = 'blackboard-updated';

export const BLACKBOARD_SCOPES = ['thread', 'space'] as const;
export type BlackboardScope = (typeof BLACKBOARD_SCOPES)[number];

/**
 * Seed 004's kinds of blackboard content: task results, shared notes, resource ids, created
 * URLs, active routines and completed tasks (the last four are list fields of its board).
 */
export const BLACKBOARD_ENTRY_KINDS = [
  'result',
  'note',
  'resource-id',
  'url',
  'active-routine',
  'completed-task',
] as const;
export type BlackboardEntryKind = (typeof BLACKBOARD_ENTRY_KINDS)[number];

const segment = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
const segmentMessage = 'letters, digits, . _ or -, starting with a letter or digit';

export const blackboardRefSchema = z.strictObject({
  scope: z.enum(BLACKBOARD_SCOPES),
  id: z.string().regex(segment, `a blackboard id is ${segmentMessage}`),
});
export type BlackboardRef = z.infer<typeof blackboardRefSchema>;

export const blackboardEntryNameSchema = z
  .string()
  .regex(segment, `a blackboard entry name is ${segmentMessage}`);

export const resourceNameSchema = memoryKeySchema.refine(
  (name) => name.length <= 190,
  'a resource name is at most 190 characters',
);

/** The item key of one entry of a board. */
export function blackboardEntryKey(board: BlackboardRef, entry: string): string {
  const parsed = blackboardRefSchema.safeParse(board);
  const name = blackboardEntryNameSchema.safeParse(entry);
  if (!parsed.success || !name.success) {
    throw new CtxbusError(
      'validation_failed',
      `not a blackboard entry: ${JSON.stringify(board)} ${JSON.stringify(entry)} (ids and entry names are ${segmentMessage})`,
    );
  }
  return `${blackboardKeyPrefix(board)}/${entry}`;
}

/** The key every entry of the board lies under (a `keyPrefix` for listings). */
export function blackboardKeyPrefix(board: BlackboardRef): string {
  return `blackboard/${board.scope}/${board.id}`;
}

/** The board and entry an item key names, or null when it is no blackboard key. */
export function parseBlackboardKey(
  key: string | null,
): { board: BlackboardRef; entry: string } | null {
  if (key === null) return null;
  const parts = key.split('/');
  if (parts.length !== 4 || parts[0] !== 'blackboard') return null;
  const [, scope, id, entry] = parts as [string, string, string, string];
  const board = blackboardRefSchema.safeParse({ scope, id });
  if (!board.success || !segment.test(entry)) return null;
  return { board: board.data, entry };
}

/** The item key of a persistent resource. */
export function resourceKey(name: string): string {
  const parsed = resourceNameSchema.safeParse(name);
  if (!parsed.success) {
    throw new CtxbusError(
      'validation_failed',
      `not a resource name: ${JSON.stringify(name)} (a path of segments: letters, digits, . _ - separated by /)`,
    );
  }
  return `resource/${name}`;
}

/** The tag of an entry or resource whose value is a string, held as it is in the content. */
export const TEXT_VALUE_TAG = 'value:text';

/**
 * How an entry or resource holds a value: a string as it is (and the tag saying so), else JSON;
 * with the writer's `tags`, in which the value's own tag is never the writer's to set.
 */
export function valueContent(
  value: unknown,
  tags: readonly string[] = [],
): { content: string; tags: string[] } {
  const given = tags.filter((tag) => tag !== TEXT_VALUE_TAG);
  if (typeof value === 'string') return { content: value, tags: [TEXT_VALUE_TAG, ...given] };
  return { content: JSON.stringify(value) ?? 'null', tags: given };
}

/**
 * The value an entry or resource item holds: its content as it is when tagged `value:text`
 * (a string, even one that reads as JSON: `"42"`), else the JSON in it (an older item's string
 * is JSON-quoted), or plain text when it is not JSON.
 */
export function itemValue(item: Pick<ContextItem, 'content' | 'relevanceTags'>): unknown {
  if (item.relevanceTags.includes(TEXT_VALUE_TAG)) return item.content;
  try {
    return JSON.parse(item.content) as unknown;
  } catch {
    return item.content;
  }
}

/** The data of a `blackboard-updated` event. */
export const blackboardEventSchema = z.object({
  seq: z.int().positive(),
  event: z.literal(BLACKBOARD_EVENT),
  change: z.enum(streamEventNames).meta({
    description: 'The change this is, as it goes out to subscribers that did not ask for boards.',
  }),
  board: blackboardRefSchema,
  entry: z.string(),
  item: contextItemSchema,
});
export type BlackboardEvent = z.infer<typeof blackboardEventSchema>;

/**
 * The `blackboard-updated` event for a change of an item, or null when the item is no
 * blackboard entry (a keyed item under `blackboard/...` that carries the `blackboard` tag).
 */
export function blackboardEventOf(change: {
  seq: number;
  kind: ChangeKind;
  item: ContextItem;
}): BlackboardEvent | null {
  if (!change.item.relevanceTags.includes(BLACKBOARD_TAG)) return null;
  const parsed = parseBlackboardKey(change.item.key);
  if (!parsed) return null;
  return {
    seq: change.seq,
    event: BLACKBOARD_EVENT,
    change: CHANGE_EVENT_NAMES[change.kind],
    board: parsed.board,
    entry: parsed.entry,
    item: change.item,
  };
}
