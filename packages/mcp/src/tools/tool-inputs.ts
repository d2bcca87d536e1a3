import {
  CONTEXT_TYPES,
  contextTypeSchema,
  LIMITS,
  runtimeNameSchema,
  SCOPES,
  scopeKeySchema,
  scopeSchema,
  tagSchema,
  URGENCIES,
  urgencySchema,
} from '@ctxbus/core/contract';
import { z } from 'zod';

/** Input pieces shared by several tools, each described for the model. */

export const typeFilterInput = z
  .union([contextTypeSchema, z.array(contextTypeSchema).min(1).max(CONTEXT_TYPES.length)])
  .describe(`Only these item types: one or a list of ${CONTEXT_TYPES.join(', ')}.`);

export const scopeFilterInput = z
  .union([scopeSchema, z.array(scopeSchema).min(1).max(SCOPES.length)])
  .describe(`Only these scopes: one or a list of ${SCOPES.join(', ')}.`);

export const scopeKeyInput = scopeKeySchema.describe(
  'Scope key: task:<id>, thread:<id>, user:<id> or team:<id>, e.g. "task:T-42".',
);

export const tagsFilterInput = z
  .array(tagSchema)
  .min(1)
  .max(LIMITS.tags)
  .describe('Only items carrying at least one of these tags, e.g. ["storage", "ci"].');

export const tagsInput = z
  .array(tagSchema)
  .max(LIMITS.tags)
  .describe(
    'Relevance tags: 1-5 short lowercase topic words without spaces, e.g. ["storage", "sqlite"], ["ci"], ["auth", "security"].',
  );

export const urgencyFilterInput = z
  .union([urgencySchema, z.array(urgencySchema).min(1).max(URGENCIES.length)])
  .describe(`Only items of these urgencies: one or a list of ${URGENCIES.join(', ')}.`);

export const minUrgencyInput = urgencySchema.describe(
  `Only items at least this urgent (${URGENCIES.join(' < ')}).`,
);

export const writerInput = runtimeNameSchema.describe(
  'Only items written by this runtime, e.g. "claude-code", "openclaw", "web".',
);

/** Tool input with `type` / `scope` given as one value or a list, as list parameters. */
export function asList<T>(value: T | readonly T[] | undefined): T[] | undefined {
  if (value === undefined) return undefined;
  return Array.isArray(value) ? [...value] : [value as T];
}

// Looser than the hub's own checks on purpose: these schemas are also the JSON Schema a model
// reads on every turn, and zod's strict UUID and date-time patterns are hundreds of characters.
// The hub still validates exactly and its message comes back as the tool error.

export const itemIdInput = z.guid({ error: 'an item id is a UUID' });

export const dateTimeInput = z
  .string()
  .regex(/^\d{4}-\d\d-\d\dT/, 'an ISO date-time, e.g. 2026-11-21T09:00:00Z');
