import { z } from 'zod';
import type { ContextItem } from '../items/context-item.js';
import { visibilitySchema } from '../items/context-item.js';
import { itemValue, RESOURCE_TAG, TEXT_VALUE_TAG } from './blackboard-contract.js';
import { writerOf } from './swarm-blackboard.js';

/**
 * Seed 004's third layer, typed: a persistent resource is a note, a routine, an API record or a
 * knowledge artifact. The type rides in a tag (`resource-type:routine`) beside `resource`, so a
 * listing filters by it; the resource's value is in the item's content (`valueContent`).
 */

export const RESOURCE_TYPES = ['note', 'routine', 'api-record', 'knowledge'] as const;
export type ResourceType = (typeof RESOURCE_TYPES)[number];
export const resourceTypeSchema = z.enum(RESOURCE_TYPES);
/** What a resource is when its writer does not say. */
export const DEFAULT_RESOURCE_TYPE: ResourceType = 'note';

const TYPE_TAG_PREFIX = 'resource-type:';

/** The tag a resource's type rides in. */
export function resourceTypeTag(type: ResourceType): string {
  return `${TYPE_TAG_PREFIX}${type}`;
}

/** The resource type an item's tags give, or null for a resource written without one. */
export function resourceTypeOf(item: Pick<ContextItem, 'relevanceTags'>): ResourceType | null {
  return RESOURCE_TYPES.find((type) => item.relevanceTags.includes(resourceTypeTag(type))) ?? null;
}

/** A resource as tools and clients show it. */
export const resourceViewSchema = z.object({
  name: z.string(),
  type: resourceTypeSchema.nullable(),
  title: z.string(),
  value: z.unknown(),
  tags: z.array(z.string()),
  visibility: visibilitySchema,
  id: z.string(),
  createdAt: z.iso.datetime({ offset: true }),
  createdBy: z.string(),
});
export type ResourceView = z.infer<typeof resourceViewSchema>;

/** The name of the resource an item holds (its key without `resource/`), or null. */
export function resourceNameOf(item: Pick<ContextItem, 'key'>): string | null {
  return item.key?.startsWith('resource/') ? item.key.slice('resource/'.length) : null;
}

/** The resource an item holds, or null when it holds none. */
export function resourceOf(item: ContextItem): ResourceView | null {
  const name = resourceNameOf(item);
  if (name === null) return null;
  return {
    name,
    type: resourceTypeOf(item),
    title: item.title,
    value: itemValue(item),
    tags: item.relevanceTags.filter(
      (tag) => tag !== RESOURCE_TAG && tag !== TEXT_VALUE_TAG && !tag.startsWith(TYPE_TAG_PREFIX),
    ),
    visibility: item.visibility,
    id: item.id,
    createdAt: item.createdAt,
    createdBy: writerOf(item),
  };
}
