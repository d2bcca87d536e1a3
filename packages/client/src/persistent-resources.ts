import type { JsonValue, ResourceWriter } from '@ctxbus/core';
import type {
  ContextItem,
  ResourceType,
  ResourceView,
  SearchResponse,
  Visibility,
} from '@ctxbus/core/contract';
import {
  CtxbusError,
  DEFAULT_RESOURCE_TYPE,
  itemValue,
  RESOURCE_TAG,
  resourceKey,
  resourceOf,
  resourceTypeTag,
  valueContent,
} from '@ctxbus/core/contract';
import type { CtxbusClient } from './ctxbus-client.js';
import { forgetIfPresent } from './layer-reads.js';

/** What the resources need of a client (a `CtxbusClient`, or an MCP tool's backend). */
export type ResourceClient = Pick<CtxbusClient, 'write' | 'list' | 'forget' | 'search'>;

export interface PersistentResourcesSettings {
  client: ResourceClient;
  agentId?: string;
}

export interface PutResourceOptions {
  title?: string;
  tags?: string[];
  type?: ResourceType;
  visibility?: Visibility;
  /**
   * Seed 004's `add` / `update`: `new` refuses a name that holds a resource (`conflict`),
   * `existing` one that holds none (`not_found`). Checked just before writing.
   */
  expect?: 'new' | 'existing';
}

export interface ListResourcesOptions {
  type?: ResourceType;
  /** Only names at or under this path (`runbooks` -> `runbooks`, `runbooks/deploy`, ...). */
  prefix?: string;
  limit?: number;
}

function refuseByExpectation(name: string, current: ResourceView | undefined, expect?: string) {
  if (expect === 'new' && current) {
    throw new CtxbusError(
      'conflict',
      `resource ${name} exists already (a ${current.type ?? 'untyped'} resource); update it, or put to replace it`,
      { details: { name, id: current.id } },
    );
  }
  if (expect === 'existing' && !current) {
    throw new CtxbusError('not_found', `no resource ${name} to update; add or put it`, {
      details: { name },
    });
  }
}

/**
 * Seed 004's third layer: long-lived keyed items `resource/<name>` tagged `resource` and their
 * type (note, routine, API record, knowledge artifact), with no expiry, found by the hub's
 * search. Writing a name again supersedes its value, keeping the type, title, tags and
 * visibility it had unless given; `delete` removes the value and its history.
 */
export class PersistentResources implements ResourceWriter {
  private readonly client: ResourceClient;
  private readonly agentId: string | undefined;

  constructor(settings: PersistentResourcesSettings) {
    this.client = settings.client;
    this.agentId = settings.agentId;
  }

  async put(
    name: string,
    value: JsonValue,
    options: PutResourceOptions = {},
  ): Promise<ContextItem> {
    const key = resourceKey(name);
    const current = await this.read(name);
    refuseByExpectation(name, current, options.expect);
    const type = options.type ?? current?.type ?? DEFAULT_RESOURCE_TYPE;
    const tags = options.tags ?? current?.tags ?? [];
    const visibility = options.visibility ?? current?.visibility;
    const { content, tags: valueTags } = valueContent(value, tags);
    const { items } = await this.client.write({
      type: 'discovery',
      title: options.title ?? current?.title ?? name,
      content,
      key,
      scope: 'global',
      relevanceTags: [...new Set([RESOURCE_TAG, resourceTypeTag(type), ...valueTags])],
      ...(visibility !== undefined && { visibility }),
      ...(this.agentId !== undefined && { source: { agentId: this.agentId } }),
    });
    const item = items[0];
    if (!item) throw new CtxbusError('internal', 'the hub returned no item for a write');
    return item;
  }

  /** The resource's value, or undefined when there is none. */
  async get(name: string): Promise<JsonValue | undefined> {
    const [item] = (await this.client.list({ key: resourceKey(name), limit: 1 })).items;
    return item ? (itemValue(item) as JsonValue) : undefined;
  }

  /** The resource with its type, title, tags and writer, or undefined when there is none. */
  async read(name: string): Promise<ResourceView | undefined> {
    const [item] = (await this.client.list({ key: resourceKey(name), limit: 1 })).items;
    return (item && resourceOf(item)) ?? undefined;
  }

  /** Resources newest first, of one type or under one path when asked. */
  async list(options: ListResourcesOptions = {}): Promise<ResourceView[]> {
    const { items } = await this.client.list({
      keyPrefix: options.prefix ? resourceKey(options.prefix) : 'resource',
      tags: options.type ? resourceTypeTag(options.type) : RESOURCE_TAG,
      limit: options.limit ?? 50,
    });
    return items.flatMap((item) => resourceOf(item) ?? []);
  }

  /** The hub's search (full text, and vectors when it has an embedding provider), resources only. */
  search(query: string, limit = 10, type?: ResourceType): Promise<SearchResponse> {
    return this.client.search({
      query,
      tags: [type ? resourceTypeTag(type) : RESOURCE_TAG],
      limit,
    });
  }

  /** Removes the resource, its value and its history; false when there was none. */
  delete(name: string): Promise<boolean> {
    return forgetIfPresent(this.client, resourceKey(name));
  }
}
