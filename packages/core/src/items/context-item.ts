import { z } from 'zod';
import { CtxbusError } from '../shared/errors.js';
import { MAX_JSON_DEPTH, tooDeep } from '../shared/validation.js';
import { CONTEXT_TYPES, SCOPES, URGENCIES, VISIBILITIES } from './item-kinds.js';

export { CONTEXT_TYPES, SCOPES, URGENCIES, VISIBILITIES };

export const contextTypeSchema = z.enum(CONTEXT_TYPES);
export const scopeSchema = z.enum(SCOPES);
export const urgencySchema = z.enum(URGENCIES);
export const visibilitySchema = z.enum(VISIBILITIES);

export type ContextType = z.infer<typeof contextTypeSchema>;
export type Scope = z.infer<typeof scopeSchema>;
export type Urgency = z.infer<typeof urgencySchema>;
export type Visibility = z.infer<typeof visibilitySchema>;

/** background < attention < blocking */
export const URGENCY_RANK: Readonly<Record<Urgency, number>> = {
  background: 0,
  attention: 1,
  blocking: 2,
};

export function urgencyAtLeast(urgency: Urgency, minimum: Urgency): boolean {
  return URGENCY_RANK[urgency] >= URGENCY_RANK[minimum];
}

export const LIMITS = {
  titleChars: 300,
  summaryChars: 1_000,
  contentChars: 100_000,
  tags: 32,
  tagChars: 64,
  keyChars: 200,
  refChars: 200,
  maxTtlSeconds: 10 * 366 * 24 * 3600,
} as const;

export const runtimeNameSchema = z
  .string()
  .regex(
    /^[a-z][a-z0-9-]{0,39}$/,
    'a runtime name is 1-40 lowercase letters, digits or dashes, starting with a letter',
  )
  .meta({ description: 'Runtime name, e.g. claude-code, openclaw, web.', example: 'claude-code' });

export const teamIdSchema = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/,
    'a team id is 1-64 letters, digits, dots, dashes or underscores, starting with a letter or digit',
  )
  .meta({ description: 'Team identifier.', example: 'acme' });

export const itemIdSchema = z.uuid().meta({
  description: 'Item id: a UUID (v7 recommended). Supplying it makes the write idempotent.',
});

/** NUL can't be stored in PostgreSQL text, so no backend accepts it (same input, same answer). */
const NO_NUL = [
  (value: string) => !value.includes('\u0000'),
  'must not contain NUL characters (\\u0000)',
] as const;

function hasNul(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  if (Array.isArray(value)) return value.some(hasNul);
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).some(([key, entry]) => key.includes('\u0000') || hasNul(entry));
  }
  return false;
}

export const scopeKeySchema = z
  .string()
  .refine(...NO_NUL)
  .max(LIMITS.refChars + 7)
  .regex(
    /^(user|team|task|thread):\S+$/,
    'a scope key is user:<id>, team:<id>, task:<id> or thread:<id>',
  )
  .meta({ description: 'ADK-style scope key.', example: 'task:T-42' });

/** Controls and format characters: zero-width spaces and joiners, direction marks, BOMs. */
const INVISIBLE = /[\p{Cc}\p{Cf}]/u;
/** A zero-width joiner inside an emoji sequence (👩‍💻), the one format character a tag keeps. */
const EMOJI_JOINER =
  /(?<=\p{Extended_Pictographic}[\u{FE0F}\u{1F3FB}-\u{1F3FF}]?)\u200D(?=\p{Extended_Pictographic})/gu;

/**
 * Whether `tag` holds a character nobody sees. Such a tag looks like another (`deploy` and
 * `deploy` with a zero-width space) but never matches it in a filter, and one with a direction
 * mark shows its characters in another order.
 */
function hasInvisibleCharacter(tag: string): boolean {
  return INVISIBLE.test(tag.replace(EMOJI_JOINER, ''));
}

/** Whether a tag has an invisible character the rules before (NUL, whitespace) do not name. */
const unnamedInvisible = (tag: string) => hasInvisibleCharacter(tag.replace(/[\s\0]/g, ''));

export const tagSchema = z
  .string()
  .min(1)
  .max(LIMITS.tagChars)
  .refine(...NO_NUL)
  .regex(/^[^\s,]+$/, 'a tag has no spaces or commas')
  .refine(
    (tag) => !unnamedInvisible(tag),
    'a tag has no invisible characters (controls, zero-width characters, direction marks)',
  );

export const memoryKeySchema = z
  .string()
  .max(LIMITS.keyChars)
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)*$/,
    'a key is a path of segments (letters, digits, . _ -) separated by /',
  )
  .meta({
    description:
      'Path-like key for long-lived knowledge. Writing an item with an existing key supersedes the item that holds it.',
    example: 'project/ctxbus/stack',
  });

/**
 * A source id is shown beside what its item says (`from claude-code/<agentId>`): one line of
 * visible text, or it could close the framing around injected context and start a forged line.
 */
/** A control, line-break, zero-width or bidi character (code points, so no regex holds them). */
function breaksLine(value: string): boolean {
  for (const char of value) {
    const code = char.codePointAt(0) ?? 0;
    if (
      code < 0x20 ||
      (code >= 0x7f && code <= 0x9f) ||
      (code >= 0x200b && code <= 0x200f) ||
      (code >= 0x2028 && code <= 0x202e) ||
      (code >= 0x2066 && code <= 0x2069)
    ) {
      return true;
    }
  }
  return false;
}
const refSchema = z
  .string()
  .min(1)
  .max(LIMITS.refChars)
  .refine(...NO_NUL)
  .refine((value) => !breaksLine(value), {
    message: 'must be one line of visible text (no control, line-break or bidi characters)',
  });
const isoDateTimeSchema = z.iso.datetime({ offset: true });

export const sourceInputSchema = z.strictObject({
  agentId: refSchema.optional(),
  taskId: refSchema.optional(),
  threadId: refSchema.optional(),
});

/**
 * JSON values kept under one runtime's name, never interpreted by other runtimes. At most
 * MAX_JSON_DEPTH levels deep, checked without recursion before z.json() walks the value, so a
 * value nested thousands of levels deep is a validation issue wherever this schema is used
 * (prepareItem included), never a stack overflow.
 */
export const runtimeOptionsSchema = z.preprocess<
  unknown,
  z.ZodRecord<typeof runtimeNameSchema, z.ZodJSONSchema>,
  Record<string, z.core.util.JSONType>
>(
  (value, ctx) => {
    const deep = tooDeep(value);
    if (deep !== null) {
      ctx.addIssue({
        code: 'custom',
        message: `${deep === '(root)' ? '' : `${deep.slice(1)}: `}nested deeper than ${MAX_JSON_DEPTH} levels`,
        input: value,
        continue: false,
      });
    }
    return value;
  },
  z.record(runtimeNameSchema, z.json()),
);

/** What a client sends to write one item. The source runtime comes from the caller's token. */
export const contextItemInputSchema = z
  .strictObject({
    id: itemIdSchema.optional(),
    type: contextTypeSchema,
    title: z
      .string()
      .trim()
      .min(1)
      .max(LIMITS.titleChars)
      .refine(...NO_NUL),
    content: z
      .string()
      .max(LIMITS.contentChars)
      .refine(...NO_NUL)
      .optional(),
    summary: z
      .string()
      .trim()
      .max(LIMITS.summaryChars)
      .refine(...NO_NUL)
      .optional(),
    source: sourceInputSchema.optional(),
    scope: scopeSchema.optional(),
    scopeKey: scopeKeySchema.optional(),
    relevanceTags: z.array(tagSchema).max(LIMITS.tags).optional(),
    urgency: urgencySchema.optional(),
    visibility: visibilitySchema.optional(),
    expiresAt: isoDateTimeSchema.optional(),
    expiresAfterSeconds: z.int().positive().max(LIMITS.maxTtlSeconds).optional(),
    // Seed 000's name for expiresAfterSeconds (see `expiresAfterOf`).
    ttl: z.int().positive().max(LIMITS.maxTtlSeconds).optional().meta({
      description: 'Seed 000: seconds to live, the same as expiresAfterSeconds.',
    }),
    supersedes: itemIdSchema.optional(),
    key: memoryKeySchema.optional(),
    runtimeOptions: runtimeOptionsSchema.optional(),
    // Seed 000's flat form of `source` (see `sourceOf`): the same fields, side by side.
    sourceRuntime: runtimeNameSchema.optional().meta({
      description: "Seed 000: must be the token's runtime (the hub never writes as another).",
    }),
    sourceAgentId: refSchema.optional(),
    sourceTaskId: refSchema.optional(),
    sourceThreadId: refSchema.optional(),
  })
  .superRefine((input, ctx) => {
    for (const [flat, nested] of FLAT_SOURCE_FIELDS) {
      const a = input[flat];
      const b = input.source?.[nested];
      if (a !== undefined && b !== undefined && a !== b) {
        ctx.addIssue({
          code: 'custom',
          path: [flat],
          message: `${flat} "${a}" disagrees with source.${nested} "${b}"; give one of them`,
        });
      }
    }
    if (input.runtimeOptions && hasNul(input.runtimeOptions)) {
      ctx.addIssue({ code: 'custom', path: ['runtimeOptions'], message: NO_NUL[1] });
    }
    if (input.expiresAt !== undefined && input.expiresAfterSeconds !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['expiresAfterSeconds'],
        message: 'give expiresAt or expiresAfterSeconds, not both',
      });
    }
    checkTtl(input, ctx);
    const prefix = input.scopeKey?.split(':', 1)[0];
    if ((prefix === 'task' || prefix === 'thread') && input.scope !== undefined) {
      if (input.scope !== prefix) {
        ctx.addIssue({
          code: 'custom',
          path: ['scopeKey'],
          message: `scope key ${input.scopeKey} needs scope "${prefix}", not "${input.scope}"`,
        });
      }
    }
  });

export type ContextItemInput = z.input<typeof contextItemInputSchema>;

/** `ttl` (seed 000's name) goes with expiresAfterSeconds only when both say the same. */
function checkTtl(
  input: { ttl?: number; expiresAfterSeconds?: number; expiresAt?: string },
  ctx: z.RefinementCtx,
): void {
  if (input.ttl === undefined) return;
  if (input.expiresAfterSeconds !== undefined && input.expiresAfterSeconds !== input.ttl) {
    ctx.addIssue({
      code: 'custom',
      path: ['ttl'],
      message: `ttl ${input.ttl} disagrees with expiresAfterSeconds ${input.expiresAfterSeconds}; give one of them (ttl is seed 000's name for it)`,
    });
  }
  if (input.expiresAt !== undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['ttl'],
      message: 'give expiresAt or ttl, not both',
    });
  }
}

/** The seconds an item lives, from either name (the schema refused the two disagreeing). */
export function expiresAfterOf(
  input: Pick<ContextItemInput, 'expiresAfterSeconds' | 'ttl'>,
): number | undefined {
  return input.expiresAfterSeconds ?? input.ttl;
}

/** Seed 000's flat source fields and their names in the nested `source` object. */
const FLAT_SOURCE_FIELDS = [
  ['sourceAgentId', 'agentId'],
  ['sourceTaskId', 'taskId'],
  ['sourceThreadId', 'threadId'],
] as const;

/**
 * The source an item is written with, from either form (nested `source` or seed 000's flat
 * fields; the schema already refused the two disagreeing). `sourceRuntime` must name the
 * writer's own runtime: the hub never writes as another runtime (403 `forbidden`).
 */
export function sourceOf(
  input: z.output<typeof contextItemInputSchema>,
  writerRuntime: string,
): { agentId?: string; taskId?: string; threadId?: string } {
  if (input.sourceRuntime !== undefined && input.sourceRuntime !== writerRuntime) {
    throw new CtxbusError(
      'forbidden',
      `sourceRuntime "${input.sourceRuntime}" is not this token's runtime (${writerRuntime}); a token writes as its own runtime only`,
      { details: { field: 'sourceRuntime', runtime: writerRuntime } },
    );
  }
  const agentId = input.source?.agentId ?? input.sourceAgentId;
  const taskId = input.source?.taskId ?? input.sourceTaskId;
  const threadId = input.source?.threadId ?? input.sourceThreadId;
  return {
    ...(agentId !== undefined && { agentId }),
    ...(taskId !== undefined && { taskId }),
    ...(threadId !== undefined && { threadId }),
  };
}

export const consumptionSchema = z.object({
  runtime: runtimeNameSchema,
  at: isoDateTimeSchema,
});

export const redactionSchema = z.object({
  field: z.string(),
  kind: z.string(),
  count: z.int().positive(),
});

export type Redaction = z.infer<typeof redactionSchema>;

/** A stored context item, as every API returns it. */
export const contextItemSchema = z.object({
  id: itemIdSchema,
  teamId: teamIdSchema,
  seq: z.int().positive().meta({ description: 'Store sequence of the write that created it.' }),
  type: contextTypeSchema,
  title: z.string(),
  content: z.string(),
  summary: z.string(),
  source: z.object({
    runtime: runtimeNameSchema,
    agentId: z.string().nullable(),
    taskId: z.string().nullable(),
    threadId: z.string().nullable(),
  }),
  scope: scopeSchema,
  scopeKey: z.string().nullable(),
  relevanceTags: z.array(z.string()),
  urgency: urgencySchema,
  visibility: visibilitySchema,
  createdAt: isoDateTimeSchema,
  expiresAt: isoDateTimeSchema.nullable(),
  supersedes: itemIdSchema.nullable(),
  supersededBy: itemIdSchema.nullable(),
  key: z.string().nullable(),
  consumed: z.boolean().meta({ description: 'True once any runtime has consumed the item.' }),
  consumedBy: z.array(consumptionSchema),
  runtimeOptions: runtimeOptionsSchema,
  redactions: z.array(redactionSchema),
  tokens: z.int().nonnegative().meta({ description: 'o200k tokens of title and content.' }),
});

export type ContextItem = z.infer<typeof contextItemSchema>;
