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
  ContextItem,
  ContextItemInput,
  SearchResponse,
} from '@ctxbus/core/contract';
import {
  BLACKBOARD_EVENT,
  BLACKBOARD_TAG,
  blackboardEntryKey,
  blackboardKeyPrefix,
  blackboardRefSchema,
  CtxbusError,
  itemValue,
  parseBlackboardKey,
  parseOrThrow,
  RESOURCE_TAG,
  resourceKey,
} from '@ctxbus/core/contract';
import type { CtxbusClient, StreamOptions } from './ctxbus-client.js';

/** The tag of a removed entry's marker (it expires at once; `entries()` never shows it). */
const REMOVED_TAG = 'removed';
const PAGE = 500;

export interface BlackboardEntry {
  name: string;
  value: JsonValue;
  kind: BlackboardEntryKind | undefined;
  item: ContextItem;
}

export interface BlackboardSettings {
  client: CtxbusClient;
  board: BlackboardRef;
  /** How long entries live (seed 004: "as long as the swarm exists"); default: no expiry. */
  ttlSeconds?: number;
  /** Written as the entries' `source.agentId`. */
  agentId?: string;
}

const ENTRY_TYPES: Record<BlackboardEntryKind, ContextItemInput['type']> = {
  result: 'status',
  note: 'discovery',
  'resource-id': 'discovery',
};

/** All items of a keyed listing, oldest first (the hub lists newest first, a page at a time). */
async function listAll(
  client: CtxbusClient,
  params: { keyPrefix?: string; key?: string; tags: string },
): Promise<ContextItem[]> {
  const items: ContextItem[] = [];
  let before: number | undefined;
  for (;;) {
    const page = await client.list({
      ...params,
      limit: PAGE,
      ...(before !== undefined && { before }),
    });
    items.push(...page.items);
    if (page.nextBefore === null) break;
    before = page.nextBefore;
  }
  return items.sort((a, b) => a.seq - b.seq);
}

/**
 * Seed 004's blackboard on the bus: the shared scratch of a thread or a space (task results,
 * notes, resource ids). Each entry is a keyed item `blackboard/<scope>/<id>/<entry>` tagged
 * `blackboard`, so writing an entry again supersedes it (the board holds latest values), and
 * the hub's team isolation, privacy, expiry and search apply as to any item. Subscribers see
 * `blackboard-updated` events (`updates()`, or `/api/stream?blackboard=true`).
 */
export class Blackboard implements BlackboardWriter {
  readonly board: BlackboardRef;
  private readonly client: CtxbusClient;
  private readonly ttlSeconds: number | undefined;
  private readonly agentId: string | undefined;

  constructor(settings: BlackboardSettings) {
    this.client = settings.client;
    this.board = parseOrThrow(blackboardRefSchema, settings.board, 'board');
    this.ttlSeconds = settings.ttlSeconds;
    this.agentId = settings.agentId;
  }

  private scopeFields(): Pick<ContextItemInput, 'scope' | 'scopeKey'> {
    return this.board.scope === 'thread'
      ? { scope: 'thread', scopeKey: `thread:${this.board.id}` }
      : { scope: 'space' };
  }

  /** Writes (or replaces) an entry. */
  async set(
    entry: string,
    value: JsonValue,
    options: { kind?: BlackboardEntryKind; runId?: string } = {},
  ): Promise<ContextItem> {
    const kind = options.kind ?? 'note';
    const { items } = await this.client.write({
      type: ENTRY_TYPES[kind],
      title: `${entry} (${this.board.scope} ${this.board.id} blackboard)`,
      content: JSON.stringify(value),
      key: blackboardEntryKey(this.board, entry),
      ...this.scopeFields(),
      relevanceTags: [BLACKBOARD_TAG, kind],
      ...(this.ttlSeconds !== undefined && { expiresAfterSeconds: this.ttlSeconds }),
      source: {
        ...(this.agentId !== undefined && { agentId: this.agentId }),
        ...(options.runId !== undefined && { taskId: options.runId }),
        ...(this.board.scope === 'thread' && { threadId: this.board.id }),
      },
    });
    const item = items[0];
    if (!item) throw new CtxbusError('internal', 'the hub returned no item for a write');
    return item;
  }

  /** The entry's latest value, or undefined when the board has none. */
  async get(entry: string): Promise<JsonValue | undefined> {
    const [item] = (
      await this.client.list({ key: blackboardEntryKey(this.board, entry), limit: 1 })
    ).items;
    if (!item || item.relevanceTags.includes(REMOVED_TAG)) return undefined;
    return itemValue(item) as JsonValue;
  }

  /** Every live entry, oldest first. */
  async entries(): Promise<BlackboardEntry[]> {
    const items = await listAll(this.client, {
      keyPrefix: blackboardKeyPrefix(this.board),
      tags: BLACKBOARD_TAG,
    });
    const entries: BlackboardEntry[] = [];
    for (const item of items) {
      const parsed = parseBlackboardKey(item.key);
      if (!parsed || item.relevanceTags.includes(REMOVED_TAG)) continue;
      const kind = item.relevanceTags.find((tag): tag is BlackboardEntryKind =>
        (['result', 'note', 'resource-id'] as string[]).includes(tag),
      );
      entries.push({ name: parsed.entry, value: itemValue(item) as JsonValue, kind, item });
    }
    return entries;
  }

  /**
   * Removes an entry: a marker supersedes it and expires at once (the hub archives it), so the
   * removal is itself a `blackboard-updated` event.
   */
  async remove(entry: string): Promise<void> {
    if ((await this.get(entry)) === undefined) return;
    await this.client.write({
      type: 'status',
      title: `${entry} removed (${this.board.scope} ${this.board.id} blackboard)`,
      content: 'null',
      key: blackboardEntryKey(this.board, entry),
      ...this.scopeFields(),
      relevanceTags: [BLACKBOARD_TAG, REMOVED_TAG],
      expiresAfterSeconds: 1,
    });
  }

  /** This board's `blackboard-updated` events, live (resuming by itself like `stream`). */
  async *updates(
    options: Pick<StreamOptions, 'since' | 'signal' | 'reconnect' | 'onReady' | 'onReconnect'> = {},
  ): AsyncGenerator<BlackboardEvent> {
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

export interface PersistentResourcesSettings {
  client: CtxbusClient;
  agentId?: string;
}

/**
 * Seed 004's third layer: long-lived keyed items `resource/<name>` tagged `resource`, with no
 * expiry, found by the hub's search. Writing a name again supersedes its value.
 */
export class PersistentResources implements ResourceWriter {
  private readonly client: CtxbusClient;
  private readonly agentId: string | undefined;

  constructor(settings: PersistentResourcesSettings) {
    this.client = settings.client;
    this.agentId = settings.agentId;
  }

  async put(
    name: string,
    value: JsonValue,
    options: { title?: string; tags?: string[] } = {},
  ): Promise<ContextItem> {
    const { items } = await this.client.write({
      type: 'discovery',
      title: options.title ?? name,
      content: JSON.stringify(value),
      key: resourceKey(name),
      scope: 'global',
      relevanceTags: [RESOURCE_TAG, ...(options.tags ?? [])],
      ...(this.agentId !== undefined && { source: { agentId: this.agentId } }),
    });
    const item = items[0];
    if (!item) throw new CtxbusError('internal', 'the hub returned no item for a write');
    return item;
  }

  async get(name: string): Promise<JsonValue | undefined> {
    const [item] = (await this.client.list({ key: resourceKey(name), limit: 1 })).items;
    return item ? (itemValue(item) as JsonValue) : undefined;
  }

  /** The hub's search (full text, and vectors when it has an embedding provider), resources only. */
  search(query: string, limit = 10): Promise<SearchResponse> {
    return this.client.search({ query, tags: [RESOURCE_TAG], limit });
  }
}
