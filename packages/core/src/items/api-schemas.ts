import { z } from 'zod';
import { CtxbusError } from '../shared/errors.js';
import { MAX_BATCH_ITEMS } from '../shared/hub-limits.js';
import { queryInt } from '../shared/query-int.js';
import { parseOrThrow } from '../shared/validation.js';
import {
  contextItemInputSchema,
  contextItemSchema,
  contextTypeSchema,
  memoryKeySchema,
  runtimeNameSchema,
  scopeKeySchema,
  scopeSchema,
  tagSchema,
  teamIdSchema,
  urgencySchema,
} from './context-item.js';

/** The most values one list filter (tags, types, scopes) may name. */
export const MAX_FILTER_VALUES = 64;

/** Comma-separated query parameter -> validated list. */
function csv<T extends z.ZodType<unknown, string>>(item: T, name: string) {
  return z
    .string()
    .transform((value) =>
      value
        .split(',')
        .map((part) => part.trim())
        .filter((part) => part.length > 0),
    )
    .pipe(
      z
        .array(item)
        .min(1, `${name} needs at least one value`)
        .max(MAX_FILTER_VALUES, `at most ${MAX_FILTER_VALUES} ${name}`),
    )
    .meta({ description: `Comma-separated ${name} (at most ${MAX_FILTER_VALUES}).` });
}

/** A list filter in a JSON body: one value or 1 to MAX_FILTER_VALUES of them. */
function oneOrList<T extends z.ZodType>(item: T) {
  return z.union([item, z.array(item).min(1).max(MAX_FILTER_VALUES)]);
}

const booleanQuery = z
  .enum(['true', 'false', '1', '0'])
  .transform((value) => value === 'true' || value === '1');

const positiveIntQuery = queryInt(1);

/**
 * A sequence number written as text (`since`, `Last-Event-ID`): digits only, from 0 to
 * 2^53 - 1 (`Number.MAX_SAFE_INTEGER`), on every store. `isSequenceText` is the same rule.
 */
export const sequenceTextSchema = z
  .string()
  .regex(/^\d+$/, { message: 'a sequence number is digits only', abort: true })
  .refine(isSequenceText, `a sequence number is at most ${Number.MAX_SAFE_INTEGER}`);

export function isSequenceText(value: string): boolean {
  return /^\d+$/.test(value) && Number.isSafeInteger(Number(value));
}

export const MAX_LIST_LIMIT = 500;
export const MAX_TOKEN_BUDGET = 200_000;

/** Query of `GET /api/context`. */
export const listQuerySchema = z.strictObject({
  scope: csv(scopeSchema, 'scopes').optional(),
  scopeKey: scopeKeySchema.optional(),
  scopeKeyPrefix: z.string().min(1).max(220).optional(),
  type: csv(contextTypeSchema, 'types').optional(),
  tags: csv(tagSchema, 'tags').optional(),
  minUrgency: urgencySchema.optional(),
  runtime: runtimeNameSchema
    .optional()
    .meta({ description: 'Only items written by this runtime.' }),
  since: z
    .string()
    .regex(
      /^\d+$|^\d{4}-\d\d-\d\d(T|$)/,
      'since is a sequence number, a date (YYYY-MM-DD, midnight UTC), an ISO date-time or a Unix time in milliseconds',
    )
    .refine(
      (value) => !/^\d+$/.test(value) || isSequenceText(value),
      `a sequence number is at most ${Number.MAX_SAFE_INTEGER}`,
    )
    .optional()
    .meta({
      description:
        "A sequence number (items written after it), a date (YYYY-MM-DD: from its midnight UTC), an ISO date-time, or a Unix time in milliseconds (13 digits or more; seed 000's since={timestamp}).",
    }),
  before: positiveIntQuery.optional().meta({ description: 'Paging: items with seq below this.' }),
  key: memoryKeySchema.optional(),
  // `sessions/` and `sessions` are the same prefix: a trailing slash is dropped, then checked.
  keyPrefix: z
    .string()
    .transform((value) => value.replace(/\/+$/, ''))
    .pipe(memoryKeySchema)
    .optional(),
  unconsumed: booleanQuery.optional(),
  includeSuperseded: booleanQuery.optional(),
  limit: queryInt(1, MAX_LIST_LIMIT).default(50),
});

/**
 * The parameters of `GET /api/context` as a client passes them (lists become comma lists, the
 * rest strings): one shape for the Node client and the browser's.
 */
export type ListParams = Partial<{
  scope: string | string[];
  scopeKey: string;
  scopeKeyPrefix: string;
  type: string | string[];
  tags: string | string[];
  minUrgency: string;
  runtime: string;
  since: number | string;
  before: number;
  key: string;
  keyPrefix: string;
  unconsumed: boolean;
  includeSuperseded: boolean;
  limit: number;
}>;

export const listResponseSchema = z.object({
  items: z.array(contextItemSchema),
  totalTokens: z.int().nonnegative(),
  nextBefore: z.int().positive().nullable().meta({
    description: 'Pass as `before` to get the next (older) page; null when there is none.',
  }),
});

/** Body of `POST /api/context`: one item, an array of items, or `{ items: [...] }`. */
export const writeRequestSchema = z.union([
  contextItemInputSchema,
  z.array(contextItemInputSchema).min(1).max(MAX_BATCH_ITEMS),
  z.strictObject({ items: z.array(contextItemInputSchema).min(1).max(MAX_BATCH_ITEMS) }),
]);

export const writeResultSchema = z.object({
  id: z.uuid(),
  seq: z.int().positive(),
  status: z.enum(['created', 'existing']).meta({
    description: '"existing" when an item with this id was already written (idempotent retry).',
  }),
});

export const writeResponseSchema = z.object({
  items: z.array(contextItemSchema),
  results: z.array(writeResultSchema),
});

export const searchRequestSchema = z.strictObject({
  query: z.string().trim().min(1).max(2_000),
  scope: oneOrList(scopeSchema).optional(),
  type: oneOrList(contextTypeSchema).optional(),
  tags: z.array(tagSchema).min(1).max(MAX_FILTER_VALUES).optional(),
  urgency: oneOrList(urgencySchema)
    .optional()
    .meta({ description: "Only items of these urgencies (seed 000's `urgency`): one or a list." }),
  scopeKey: scopeKeySchema.optional(),
  limit: z.int().min(1).max(100).default(10),
  includeSuperseded: z.boolean().optional(),
});

export const searchResultSchema = z.object({
  item: contextItemSchema,
  score: z.number().meta({ description: 'Higher is more relevant; comparable within a response.' }),
  highlight: z.string().meta({ description: 'Best-matching passage, matches wrapped in **.' }),
});

export const searchResponseSchema = z.object({
  results: z.array(searchResultSchema),
  mode: z.enum(['fulltext', 'hybrid']).meta({
    description:
      '`hybrid`: full-text and vector rankings fused (reciprocal rank fusion); `fulltext`: full text alone (no embedding provider, no vectors yet for this team, or the provider failed: see `vector`).',
  }),
  vector: z
    .object({
      model: z.string(),
      index: z.enum(['pgvector', 'exact']),
      used: z.boolean(),
      reason: z.string().optional().meta({ description: 'Why vectors were not used.' }),
    })
    .optional()
    .meta({ description: 'Present when the hub has an embedding provider.' }),
});

export const sharedQuerySchema = z.strictObject({
  runtime: runtimeNameSchema.optional().meta({
    description: "Runtime to format for; defaults to the token's runtime.",
  }),
  tokenBudget: queryInt(1, MAX_TOKEN_BUDGET).optional(),
  preview: booleanQuery.optional().meta({
    description:
      "A look at the bundle, not an injection: not counted in the analytics (GET /api/analytics). A bundle for another runtime than the token's is always a preview.",
  }),
});

const itemRefSchema = z.object({ id: z.string(), seq: z.int().nonnegative() });

const sharedEntrySchema = z.object({
  id: z.string(),
  refs: z.array(itemRefSchema),
  mode: z.enum(['full', 'compact']),
  text: z.string(),
});

const seedSection = (description: string) => z.array(sharedEntrySchema).meta({ description });

export const sharedResponseSchema = z.object({
  runtime: runtimeNameSchema,
  format: z.enum(['markdown', 'text']),
  formatted: z.string(),
  formattedMarkdown: z.string().meta({
    description:
      'Markdown for every runtime (seed 000): `formatted` itself for Markdown runtimes, else the same sections rendered as Markdown within the same budget.',
  }),
  sections: z.array(
    z.object({
      id: z.string(),
      title: z.string(),
      entries: z.array(sharedEntrySchema),
    }),
  ),
  identity: z
    .object({
      teamId: teamIdSchema,
      runtime: runtimeNameSchema,
      entries: z.array(sharedEntrySchema),
    })
    .meta({ description: 'Seed 000: who (team, runtime, and items keyed identity/...).' }),
  activeTasks: seedSection('Seed 000: the `activeTasks` section.'),
  blockedItems: seedSection('Seed 000: the `blockedItems` section.'),
  recentDecisions: seedSection('Seed 000: the `recentDecisions` section.'),
  currentFocus: z.string().meta({
    description:
      "Seed 000: the current focus alone: the focus item's content, or its summary where the budget compacted it (one line per entry); `formatted` has it as a labelled bullet.",
  }),
  recentInteractionSummaries: seedSection('Seed 000: the `recentInteractions` section.'),
  threadSummaries: seedSection('Seed 000: the `threadSummaries` section.'),
  projectContext: seedSection('Seed 000: the `projectContext` section.'),
  frequentlyAccessedDocs: seedSection(
    "Seed 000's `frequently_accessed_docs`: the team's documents used most in the 14 whole UTC days before today (found in searches or consumed, by any runtime).",
  ),
  totalTokens: z.int().nonnegative(),
  tokenBudget: z.int().positive(),
  effectiveBudget: z.int().nonnegative(),
  contextHash: z.string(),
  trim: z.object({
    trimmed: z.boolean(),
    tokensBeforeTrim: z.int().nonnegative(),
    actions: z.array(
      z.object({
        section: z.string(),
        entry: z.string().nullable(),
        action: z.enum(['compact', 'drop', 'truncate']),
      }),
    ),
  }),
  snapshot: z.object({
    contextHash: z.string(),
    sourceCounts: z.record(z.string(), z.int()),
    trimmed: z.boolean(),
    itemRefs: z.array(itemRefSchema),
  }),
  warnings: z.array(z.object({ type: z.enum(['flattened', 'unsupported']), message: z.string() })),
  items: z.array(contextItemSchema).optional(),
});

export const streamQuerySchema = z.strictObject({
  scope: csv(scopeSchema, 'scopes').optional(),
  scopeKey: scopeKeySchema.optional(),
  tags: csv(tagSchema, 'tags').optional(),
  type: csv(contextTypeSchema, 'types').optional(),
  minUrgency: urgencySchema.optional(),
  since: sequenceTextSchema.transform(Number).optional().meta({
    description: 'Resume after this sequence (the Last-Event-ID header takes precedence).',
  }),
  blackboard: booleanQuery.optional().meta({
    description:
      'When true, a change of a blackboard entry (a `blackboard`-tagged item keyed `blackboard/<thread|space>/<id>/<entry>`) goes out as a `blackboard-updated` event (data `{seq, event, change, board, entry, item}`, `change` naming the context-* event it stands for) instead of its context-* event. Off by default, so existing readers see only context-* events.',
  }),
});

export const itemIdParamsSchema = z.strictObject({ id: z.uuid() });

export const itemResponseSchema = z.object({ item: contextItemSchema });

export const resolveItemQuerySchema = z.strictObject({
  runtime: runtimeNameSchema.optional().meta({
    description: "The runtime to resolve the item for (default: the caller's).",
  }),
});

export const resolveItemResponseSchema = z.object({
  resolved: z.object({
    format: z.enum(['markdown', 'text', 'json']),
    content: z.string(),
    injection: z.enum(['hook-additional-context', 'prepend-context', 'structured']),
    itemId: z.string(),
    runtime: z.string(),
  }),
});

export const errorResponseSchema = z.object({
  error: z.object({
    code: z.string(),
    message: z.string(),
    details: z.unknown().optional(),
  }),
});

export const tokenRoleSchema = z.enum(['admin', 'runtime']);

export const tokenInfoSchema = z.object({
  id: z.string(),
  role: tokenRoleSchema,
  teamId: teamIdSchema.nullable(),
  runtime: runtimeNameSchema.nullable(),
  label: z.string().nullable(),
  createdAt: z.iso.datetime({ offset: true }),
  revokedAt: z.iso.datetime({ offset: true }).nullable(),
});

export type TokenInfo = z.infer<typeof tokenInfoSchema>;

export const createTokenRequestSchema = z.strictObject({
  teamId: teamIdSchema,
  runtime: runtimeNameSchema,
  label: z.string().trim().min(1).max(200).optional(),
});

export const createTokenResponseSchema = z.object({
  token: z.string().meta({ description: 'The secret; shown only in this response.' }),
  info: tokenInfoSchema,
});

export const listTokensQuerySchema = z.strictObject({
  team: teamIdSchema.optional(),
  includeRevoked: booleanQuery.optional(),
});

export const tokenIdParamsSchema = z.strictObject({ id: z.string().min(1).max(64) });

/**
 * Where the hub's capability matrix comes from and how its last load went (`/health`,
 * `GET /api/capabilities`).
 */
export const capabilitiesStatusSchema = z.object({
  file: z.string().nullable().meta({
    description: 'The capabilities file the hub watches; null when it has none (empty matrix).',
  }),
  status: z.enum(['loaded', 'empty']).meta({
    description:
      "`loaded`: the matrix is the file's (as of `loadedAt`); `empty`: no matrix was loaded yet (no file, or it never parsed).",
  }),
  loadedAt: z.iso.datetime({ offset: true }).nullable(),
  digest: z.string().nullable().meta({ description: 'SHA-256 of the loaded text, hex.' }),
  runtimes: z.int().nonnegative(),
  error: z
    .object({ message: z.string(), at: z.iso.datetime({ offset: true }) })
    .nullable()
    .meta({
      description:
        'Why the file as it is now was not loaded (FILE:LINE:COL: what was expected, or that it is missing); the hub keeps the last good matrix. Null once a good version is read.',
    }),
});

export type CapabilitiesStatus = z.infer<typeof capabilitiesStatusSchema>;

export const healthResponseSchema = z.object({
  status: z.literal('ok'),
  version: z.string(),
  store: z.string(),
  seq: z.int().nonnegative().optional().meta({
    description:
      "The store's newest sequence, for a request with a valid token (a stream's or a read's `since`).",
  }),
  capabilities: capabilitiesStatusSchema.optional().meta({
    description: "The capability matrix's file and its last load (absent from older hubs).",
  }),
  embeddings: z
    .object({
      model: z.string(),
      /** Vectors this hub stored since it started, and items the provider refused. */
      embedded: z.int().nonnegative(),
      refused: z.int().nonnegative(),
      /** The last provider call failed (search ranks by full text until one succeeds). */
      failing: z.boolean(),
    })
    .optional()
    .meta({ description: 'Present when the hub has an embedding provider.' }),
});

/**
 * The newest sequence a /health answer gave (a stream's or a read's `since`). The hub shows
 * it only to a request with a token it takes: without one, this says so.
 */
export function healthSeq(health: { seq?: number | undefined }): number {
  if (health.seq === undefined) {
    throw new CtxbusError(
      'unauthorized',
      'the hub did not give its newest sequence: it does so only to a request with a token it takes',
    );
  }
  return health.seq;
}

export const streamEventNames = [
  'context-added',
  'context-consumed',
  'context-superseded',
] as const;

/** A change event's name, noun then action. */
export type ChangeEventName = (typeof streamEventNames)[number];

/** What a change did to its item (the store's change log records one of these). */
export type ChangeKind = 'added' | 'consumed' | 'superseded';

/** The name each kind of change goes out under: SSE, WebSocket and webhook events alike. */
export const CHANGE_EVENT_NAMES: Readonly<Record<ChangeKind, ChangeEventName>> = {
  added: 'context-added',
  consumed: 'context-consumed',
  superseded: 'context-superseded',
};

/** The data of each SSE event: the change and the item as it is after it. */
export const streamEventSchema = z.object({
  seq: z.int().positive(),
  event: z.enum(streamEventNames),
  item: contextItemSchema,
});

export type StreamEvent = z.infer<typeof streamEventSchema>;

/**
 * Why the hub ended a stream (SSE event `disconnect`; WebSocket message `{"type":"disconnect"}`
 * then close code 4008 or 4001): resume after `resumeAfter` (a slow reader), or stop (a
 * revoked token).
 */
export const streamDisconnectSchema = z.object({
  reason: z.enum(['slow_reader', 'token_revoked']),
  message: z.string(),
  resumeAfter: z.int().nonnegative(),
});

export type StreamDisconnect = z.infer<typeof streamDisconnectSchema>;
export type ListQuery = z.output<typeof listQuerySchema>;
export type SearchRequest = z.input<typeof searchRequestSchema>;
export type SharedContextResponse = z.infer<typeof sharedResponseSchema>;
export type WriteResponse = z.infer<typeof writeResponseSchema>;
export type SearchResponse = z.infer<typeof searchResponseSchema>;
export type ListResponse = z.infer<typeof listResponseSchema>;

const batchSchema = z.array(contextItemInputSchema).min(1).max(MAX_BATCH_ITEMS);
const wrappedBatchSchema = z.strictObject({ items: batchSchema });

/**
 * Reads a write body (one item, an array, or `{ items }`) into a list of item inputs. The
 * shape is chosen first, so errors name the field (`body.items[3].type`) instead of listing
 * every union branch.
 */
export function parseWriteRequest(body: unknown): z.output<typeof contextItemInputSchema>[] {
  if (Array.isArray(body)) return parseOrThrow(batchSchema, body, 'body');
  if (body !== null && typeof body === 'object' && 'items' in body) {
    return parseOrThrow(wrappedBatchSchema, body, 'body').items;
  }
  return [parseOrThrow(contextItemInputSchema, body, 'body')];
}

/** Query of `GET /api/archive`. */
export const archiveQuerySchema = z.strictObject({
  limit: queryInt(1, MAX_LIST_LIMIT).default(50),
  before: positiveIntQuery.optional().meta({ description: 'Page: archive ids below this.' }),
});

export const archivedItemSchema = z.object({
  archiveId: z.int().positive(),
  reason: z.enum(['expired', 'retention']),
  archivedAt: z.iso.datetime({ offset: true }),
  item: contextItemSchema,
});

export const archiveResponseSchema = z.object({
  items: z.array(archivedItemSchema),
  nextBefore: z.int().positive().nullable(),
});
export type ArchiveResponse = z.infer<typeof archiveResponseSchema>;

/** Query of `DELETE /api/context`: the key whose value and history go. */
export const forgetKeyQuerySchema = z.strictObject({
  key: memoryKeySchema.meta({ description: 'The key to remove, e.g. `resource/runbooks/deploy`.' }),
});

export const forgetKeyResponseSchema = z.object({
  key: z.string(),
  removed: z.int().nonnegative().meta({
    description:
      'Values of the key removed: the live one and its history, as the caller sees them.',
  }),
  seq: z.int().positive().nullable().meta({
    description:
      'The change that announced it (the marker superseding the live value); null when the key had no live value, only history.',
  }),
});
export type ForgetKeyResponse = z.infer<typeof forgetKeyResponseSchema>;
