import type {
  BlackboardWriter,
  ContextOptimizer,
  JsonValue,
  LayerBounds,
  LayerEntry,
  OptimizationAction,
  ResourceWriter,
} from '@ctxbus/core';
import type {
  BlackboardEntryKind,
  BlackboardEvent,
  BlackboardRef,
  BoardListField,
  ContextItem,
  ContextItemInput,
  NotePriority,
  SwarmBlackboard,
  Visibility,
} from '@ctxbus/core/contract';
import {
  BLACKBOARD_EVENT,
  BLACKBOARD_TAG,
  BOARD_LIST_FIELDS,
  blackboardEntryKey,
  blackboardKeyPrefix,
  blackboardRefSchema,
  CtxbusError,
  entryKindOf,
  itemValue,
  listEntryName,
  parseBlackboardKey,
  parseOrThrow,
  priorityTag,
  REMOVED_TAG,
  swarmBlackboardOf,
  valueContent,
} from '@ctxbus/core/contract';
import type { CtxbusClient, StreamOptions } from './ctxbus-client.js';
import { forgetIfPresent, listAll } from './layer-reads.js';

export interface BlackboardEntry {
  name: string;
  value: JsonValue;
  kind: BlackboardEntryKind | undefined;
  item: ContextItem;
}

/** What a board needs of a client (a `CtxbusClient`, or an MCP tool's backend). */
export type BoardClient = Pick<CtxbusClient, 'write' | 'list' | 'forget'> &
  Partial<Pick<CtxbusClient, 'streamWithBlackboard'>>;

export interface BlackboardSettings {
  client: BoardClient;
  board: BlackboardRef;
  /** How long entries live (seed 004: "as long as the swarm exists"); default: no expiry. */
  ttlSeconds?: number;
  /** Written as the entries' `source.agentId`. */
  agentId?: string;
  /** `private`: only the writing runtime sees the entries this board writes (default `team`). */
  visibility?: Visibility;
}

/** How one entry is written. */
export interface EntryOptions {
  kind?: BlackboardEntryKind;
  runId?: string;
  /** Relevance tags besides `blackboard` and the kind (a note's tags). */
  tags?: readonly string[];
  /** A note's priority (seed 004's `BlackboardNote.priority`), as the tag `priority:<p>`. */
  priority?: NotePriority;
}

/** A note as seed 004 writes one; `id` names its entry (a fresh `note-<uuid>` when absent). */
export interface NoteInput {
  id?: string;
  content: string;
  tags?: readonly string[];
  priority?: NotePriority;
}

const ENTRY_TYPES: Record<BlackboardEntryKind, ContextItemInput['type']> = {
  result: 'status',
  note: 'discovery',
  'resource-id': 'discovery',
  url: 'discovery',
  'active-routine': 'status',
  'completed-task': 'status',
};

/**
 * Seed 004's blackboard on the bus: the shared scratch of a thread or a space (task results,
 * notes, resource ids, created URLs, active routines, completed tasks). Each entry is a keyed
 * item `blackboard/<scope>/<id>/<entry>` tagged `blackboard` and its kind, so writing an entry
 * again supersedes it (the board holds latest values), and the hub's team isolation, privacy,
 * expiry and search apply as to any item. Each element of a list field is an entry of its own
 * (`listEntryName`), so agents adding to one list never overwrite each other. Subscribers see
 * `blackboard-updated` events (`updates()`, or `/api/stream?blackboard=true`).
 */
export class Blackboard implements BlackboardWriter {
  readonly board: BlackboardRef;
  private readonly client: BoardClient;
  private readonly ttlSeconds: number | undefined;
  private readonly agentId: string | undefined;
  private readonly visibility: Visibility | undefined;

  constructor(settings: BlackboardSettings) {
    this.client = settings.client;
    this.board = parseOrThrow(blackboardRefSchema, settings.board, 'board');
    this.ttlSeconds = settings.ttlSeconds;
    this.agentId = settings.agentId;
    this.visibility = settings.visibility;
  }

  private scopeFields(): Pick<ContextItemInput, 'scope' | 'scopeKey'> {
    return this.board.scope === 'thread'
      ? { scope: 'thread', scopeKey: `thread:${this.board.id}` }
      : { scope: 'space' };
  }

  /** The item one entry is written as. */
  private entryInput(entry: string, value: JsonValue, options: EntryOptions): ContextItemInput {
    const kind = options.kind ?? 'note';
    const { content, tags: valueTags } = valueContent(value, options.tags);
    const tags = [
      BLACKBOARD_TAG,
      kind,
      ...(options.priority ? [priorityTag(options.priority)] : []),
      ...valueTags,
    ];
    return {
      type: ENTRY_TYPES[kind],
      title: `${entry} (${this.board.scope} ${this.board.id} blackboard)`,
      content,
      key: blackboardEntryKey(this.board, entry),
      ...this.scopeFields(),
      relevanceTags: [...new Set(tags)],
      ...(this.visibility !== undefined && { visibility: this.visibility }),
      ...(this.ttlSeconds !== undefined && { expiresAfterSeconds: this.ttlSeconds }),
      source: {
        ...(this.agentId !== undefined && { agentId: this.agentId }),
        ...(options.runId !== undefined && { taskId: options.runId }),
        ...(this.board.scope === 'thread' && { threadId: this.board.id }),
      },
    };
  }

  /** Writes entries in one atomic batch; returns them as stored. */
  private async writeEntries(
    entries: readonly { name: string; value: JsonValue; options: EntryOptions }[],
  ): Promise<ContextItem[]> {
    if (entries.length === 0) return [];
    const { items } = await this.client.write(
      entries.map(({ name, value, options }) => this.entryInput(name, value, options)),
    );
    if (items.length !== entries.length) {
      throw new CtxbusError('internal', 'the hub returned fewer items than it was given');
    }
    return items;
  }

  /** Writes (or replaces) an entry. */
  async set(entry: string, value: JsonValue, options: EntryOptions = {}): Promise<ContextItem> {
    const [item] = await this.writeEntries([{ name: entry, value, options }]);
    return item as ContextItem;
  }

  /** Writes (or replaces) several entries in one atomic write: all of them, or none. */
  setMany(
    entries: readonly { name: string; value: JsonValue; options?: EntryOptions }[],
  ): Promise<ContextItem[]> {
    return this.writeEntries(entries.map((entry) => ({ ...entry, options: entry.options ?? {} })));
  }

  /** The entry's latest value, or undefined when the board has none. */
  async get(entry: string): Promise<JsonValue | undefined> {
    const [item] = (
      await this.client.list({ key: blackboardEntryKey(this.board, entry), limit: 1 })
    ).items;
    if (!item || item.relevanceTags.includes(REMOVED_TAG)) return undefined;
    return itemValue(item) as JsonValue;
  }

  /** The live items of the board, oldest first. */
  private items(): Promise<ContextItem[]> {
    return listAll(this.client, {
      keyPrefix: blackboardKeyPrefix(this.board),
      tags: BLACKBOARD_TAG,
    });
  }

  /** Every live entry, oldest first. */
  async entries(): Promise<BlackboardEntry[]> {
    const entries: BlackboardEntry[] = [];
    for (const item of await this.items()) {
      const parsed = parseBlackboardKey(item.key);
      if (!parsed || item.relevanceTags.includes(REMOVED_TAG)) continue;
      const value = itemValue(item) as JsonValue;
      entries.push({ name: parsed.entry, value, kind: entryKindOf(item), item });
    }
    return entries;
  }

  /** Seed 004's `SwarmBlackboard` of this board, as the caller sees it. */
  async state(): Promise<SwarmBlackboard> {
    return swarmBlackboardOf(this.board, await this.items());
  }

  /**
   * Removes an entry, its value and its history (`client.forget`): a marker supersedes it, so
   * the removal is itself a `blackboard-updated` event. False when the board had no such entry.
   */
  remove(entry: string): Promise<boolean> {
    return forgetIfPresent(this.client, blackboardEntryKey(this.board, entry));
  }

  /** Adds notes (seed 004's `sharedNotes`); returns their ids. */
  async addNotes(notes: readonly NoteInput[]): Promise<string[]> {
    const named = notes.map((note) => ({ ...note, id: note.id ?? `note-${crypto.randomUUID()}` }));
    await this.writeEntries(
      named.map((note) => ({
        name: note.id,
        value: note.content,
        options: {
          kind: 'note',
          ...(note.tags && { tags: note.tags }),
          ...(note.priority && { priority: note.priority }),
        },
      })),
    );
    return named.map((note) => note.id);
  }

  /**
   * Adds values to a list field (`createdUrls`, `activeRoutines`, ...), in one write; a value
   * the list holds already keeps its place. Returns the values added.
   */
  async addToList(field: BoardListField, values: readonly string[]): Promise<string[]> {
    const kind = BOARD_LIST_FIELDS[field];
    const held = new Set((await this.entriesOfKind(kind)).map((entry) => String(entry.value)));
    const added = [...new Set(values)].filter((value) => !held.has(value));
    await this.writeEntries(
      added.map((value) => ({ name: listEntryName(kind, value), value, options: { kind } })),
    );
    return added;
  }

  /** Removes values from a list field; returns those it held. */
  async removeFromList(field: BoardListField, values: readonly string[]): Promise<string[]> {
    const kind = BOARD_LIST_FIELDS[field];
    const removed: string[] = [];
    for (const value of new Set(values)) {
      if (await this.remove(listEntryName(kind, value))) removed.push(value);
    }
    return removed;
  }

  /** Entries of one kind, by name. */
  private async entriesOfKind(kind: BlackboardEntryKind): Promise<BlackboardEntry[]> {
    return (await this.entries()).filter((entry) => entry.kind === kind);
  }

  /**
   * Makes a list field hold exactly `values`: adds the missing ones (one write), then removes
   * the others, so a refused write removes nothing.
   */
  async setList(field: BoardListField, values: readonly string[]): Promise<void> {
    const kind = BOARD_LIST_FIELDS[field];
    const wanted = new Set(values);
    const held = await this.entriesOfKind(kind);
    await this.addToList(field, values);
    for (const entry of held) {
      if (!wanted.has(String(entry.value))) await this.remove(entry.name);
    }
  }

  /** Removes every entry of `kind` whose name is not in `keep`; returns the names removed. */
  async removeKindExcept(kind: BlackboardEntryKind, keep: ReadonlySet<string>): Promise<string[]> {
    const removed: string[] = [];
    for (const entry of await this.entriesOfKind(kind)) {
      if (!keep.has(entry.name) && (await this.remove(entry.name))) removed.push(entry.name);
    }
    return removed;
  }

  /** This board's `blackboard-updated` events, live (resuming by itself like `stream`). */
  async *updates(
    options: Pick<StreamOptions, 'since' | 'signal' | 'reconnect' | 'onReady' | 'onReconnect'> = {},
  ): AsyncGenerator<BlackboardEvent> {
    if (!this.client.streamWithBlackboard) {
      throw new CtxbusError(
        'validation_failed',
        'this board was given a client that cannot stream',
      );
    }
    for await (const event of this.client.streamWithBlackboard({
      ...options,
      tags: BLACKBOARD_TAG,
    })) {
      if (event.event !== BLACKBOARD_EVENT) continue;
      const update = event as BlackboardEvent;
      if (update.board.scope === this.board.scope && update.board.id === this.board.id) {
        yield update;
      }
    }
  }

  /**
   * Keeps the board within `bounds` with seed 004's optimizer (from `@ctxbus/core`): entries
   * it archives move to persistent resources under `archive/<scope>/<id>/<entry>` and leave the
   * board; values it references are stored as resources under their reference; compressed and
   * summary entries are written back.
   */
  async optimize(
    optimizer: Pick<ContextOptimizer, 'optimizeEntries'>,
    bounds: LayerBounds,
    resources: ResourceWriter,
  ): Promise<{ actions: OptimizationAction[]; withinBounds: boolean }> {
    const entries = await this.entries();
    const before = new Map(entries.map((entry) => [entry.name, entry]));
    const plan = optimizer.optimizeEntries(
      entries.map(({ name, value }): LayerEntry => ({ name, value })),
      bounds,
    );
    for (const entry of plan.referenced) {
      await resources.put(entry.ref, entry.value, { title: entry.name });
    }
    for (const entry of plan.archived) {
      await resources.put(
        `archive/${this.board.scope}/${this.board.id}/${entry.name}`,
        entry.value,
        { title: entry.name },
      );
      await this.remove(entry.name);
    }
    for (const entry of plan.entries) {
      const old = before.get(entry.name);
      if (old && JSON.stringify(old.value) === JSON.stringify(entry.value)) continue;
      await this.set(entry.name, entry.value, { kind: old?.kind ?? 'note' });
    }
    return { actions: plan.actions, withinBounds: plan.withinBounds };
  }
}
