import { z } from 'zod';
import { queryInt } from '../shared/query-int.js';
import { streamEventNames } from './api-schemas.js';
import {
  contextItemSchema,
  contextTypeSchema,
  runtimeNameSchema,
  scopeKeySchema,
  scopeSchema,
  tagSchema,
  teamIdSchema,
  urgencySchema,
} from './context-item.js';

// Subscriptions (seed 000's ContextSubscription): what a runtime wants to hear about, and how
// it is told: pushed to a webhook, or pulled from a cursor the hub keeps for it.

export const deliveryModeSchema = z.enum(['push', 'pull']);
export type DeliveryMode = z.infer<typeof deliveryModeSchema>;

/** Which changes a subscription carries: new items by default. */
export const subscriptionEventSchema = z.enum(streamEventNames);
export type SubscriptionEvent = z.infer<typeof subscriptionEventSchema>;

/** What a subscription selects; every given condition must hold (tags: any of them). */
export const subscriptionFilterSchema = z.strictObject({
  scopes: z.array(scopeSchema).min(1).max(4).optional(),
  scopeKey: scopeKeySchema.optional(),
  tags: z.array(tagSchema).min(1).max(50).optional(),
  types: z.array(contextTypeSchema).min(1).max(5).optional(),
  minUrgency: urgencySchema.optional(),
  events: z.array(subscriptionEventSchema).min(1).max(3).optional().meta({
    description: 'Changes to carry (default: `context-added` only).',
  }),
});
export type SubscriptionFilter = z.infer<typeof subscriptionFilterSchema>;

export const MAX_ENDPOINT_LENGTH = 2_048;

/** A URL's authority ending in port 0 (`:0`, `:00`, ...), after any user info. */
const PORT_ZERO = /^[a-z][a-z0-9+.-]*:\/\/(?:[^/?#@]*@)?(?:\[[^\]]*\]|[^/?#:]*):0+(?:[/?#]|$)/i;

const ctxbusSubscriptionRequestSchema = z
  .strictObject({
    runtime: runtimeNameSchema.optional().meta({
      description: "The subscribing runtime; defaults to (and must equal) the token's runtime.",
    }),
    delivery: deliveryModeSchema,
    endpoint: z
      .url({ protocol: /^https?$/ })
      .max(MAX_ENDPOINT_LENGTH)
      .refine((url) => !PORT_ZERO.test(url), {
        message: 'the endpoint names port 0, where no server listens: give its real port',
      })
      .optional()
      .meta({
        description:
          'Push only: the http(s) URL the hub POSTs each change to. Private and loopback addresses are refused unless the hub allows them.',
      }),
    label: z.string().trim().min(1).max(200).optional(),
    filter: subscriptionFilterSchema.optional(),
    since: z.int().nonnegative().optional().meta({
      description: 'Start after this sequence (0: replay everything); default: the newest change.',
    }),
  })
  .superRefine((value, context) => {
    if (value.delivery === 'push' && value.endpoint === undefined) {
      context.addIssue({ code: 'custom', path: ['endpoint'], message: 'push needs an endpoint' });
    }
    if (value.delivery === 'pull' && value.endpoint !== undefined) {
      context.addIssue({
        code: 'custom',
        path: ['endpoint'],
        message: 'a pull subscription has no endpoint',
      });
    }
  });
/**
 * Seed 000's ContextSubscription as written: `runtimeType` is the runtime (it must be the
 * token's), `runtimeId` the subscribing instance (kept as the label), `scopes`,
 * `relevanceTags` (any of them) and `minUrgency` the filter (an empty list selects everything),
 * `deliveryMode` and `endpoint` the delivery (`deliveryMode` left out: the seed's default,
 * `pull`, or `push` when an endpoint is given).
 */
export const seedSubscriptionRequestSchema = z
  .strictObject({
    runtimeId: z.string().trim().min(1).max(200),
    runtimeType: runtimeNameSchema,
    scopes: z.array(scopeSchema).max(4).default([]),
    relevanceTags: z.array(tagSchema).max(50).default([]),
    minUrgency: urgencySchema.optional(),
    deliveryMode: deliveryModeSchema.optional(),
    endpoint: z
      .url({ protocol: /^https?$/ })
      .max(MAX_ENDPOINT_LENGTH)
      .optional(),
  })
  .transform(
    (seed): z.input<typeof ctxbusSubscriptionRequestSchema> => ({
      runtime: seed.runtimeType,
      delivery: seed.deliveryMode ?? (seed.endpoint === undefined ? 'pull' : 'push'),
      ...(seed.endpoint !== undefined && { endpoint: seed.endpoint }),
      label: seed.runtimeId,
      filter: {
        ...(seed.scopes.length > 0 && { scopes: [...new Set(seed.scopes)] }),
        ...(seed.relevanceTags.length > 0 && { tags: seed.relevanceTags }),
        ...(seed.minUrgency !== undefined && { minUrgency: seed.minUrgency }),
      },
    }),
  )
  .pipe(ctxbusSubscriptionRequestSchema);

/** Keys only the seed's form has (at its top): a body with one of them is read as the seed's. */
const SEED_KEYS = [
  'runtimeId',
  'runtimeType',
  'deliveryMode',
  'relevanceTags',
  'scopes',
  'minUrgency',
];

/**
 * A subscription request: ctxbus's form, or the seed's (`runtimeId`, `deliveryMode`, ...). A
 * body that fits neither is told what is wrong with the form it is closer to, field by field.
 */
export const createSubscriptionRequestSchema = z.union(
  [ctxbusSubscriptionRequestSchema, seedSubscriptionRequestSchema],
  {
    error: (issue) => {
      if (issue.code !== 'invalid_union') return undefined;
      const input = issue.input;
      const seedForm =
        typeof input === 'object' && input !== null && SEED_KEYS.some((key) => key in input);
      const issues = issue.errors[seedForm ? 1 : 0] ?? [];
      // One line per field: a list's size check also fires on a string given for it
      // ("expected array" beside "expected string to have <=4 characters").
      const fields = new Map<string, string>();
      for (const one of issues) {
        const path = one.path.join('.');
        if (!fields.has(path)) fields.set(path, path ? `${path}: ${one.message}` : one.message);
      }
      const lines = [...fields.values()].join('; ');
      return seedForm
        ? `${lines} (read as seed 000's ContextSubscription)`
        : `${lines} (or seed 000's ContextSubscription: runtimeId, runtimeType, deliveryMode)`;
    },
  },
);

export type CreateSubscriptionRequest = z.input<typeof createSubscriptionRequestSchema>;

export const subscriptionSchema = z.object({
  id: z.string(),
  teamId: teamIdSchema,
  runtime: runtimeNameSchema,
  delivery: deliveryModeSchema,
  endpoint: z.string().nullable(),
  label: z.string().nullable(),
  filter: subscriptionFilterSchema,
  createdAt: z.iso.datetime({ offset: true }),
  cursor: z.int().nonnegative().meta({
    description: 'Every change up to this sequence was delivered, acknowledged or dead-lettered.',
  }),
  delivered: z.int().nonnegative(),
  deadLettered: z.int().nonnegative(),
  retry: z
    .object({
      attempts: z.int().positive(),
      nextAttemptAt: z.iso.datetime({ offset: true }),
      lastError: z.string(),
    })
    .nullable()
    .meta({ description: 'Push: the failing delivery being retried, if any.' }),
});
export type Subscription = z.infer<typeof subscriptionSchema>;

export const createSubscriptionResponseSchema = z.object({
  subscription: subscriptionSchema,
  secret: z.string().nullable().meta({
    description:
      'Push: the signing secret (`whsec_...`), shown only in this response; null for pull.',
  }),
});

export const subscriptionResponseSchema = z.object({ subscription: subscriptionSchema });
export const listSubscriptionsResponseSchema = z.object({
  subscriptions: z.array(subscriptionSchema),
});

export const subscriptionIdParamsSchema = z.strictObject({
  id: z.string().regex(/^sub_[0-9a-f-]{36}$/, 'a subscription id (sub_...)'),
});

export const pendingQuerySchema = z.strictObject({
  limit: queryInt(1, 500).default(100),
});

export const pendingResponseSchema = z.object({
  changes: z.array(
    z.object({ seq: z.int().positive(), event: subscriptionEventSchema, item: contextItemSchema }),
  ),
  next: z.int().nonnegative().meta({
    description:
      'Acknowledge this sequence (POST .../ack) once the changes are handled: everything up to it was read, matching or not.',
  }),
  more: z.boolean().meta({ description: 'More changes wait beyond `next`.' }),
});
export type PendingResponse = z.infer<typeof pendingResponseSchema>;

export const ackRequestSchema = z.strictObject({ seq: z.int().nonnegative() });

export const deadLetterSchema = z.object({
  seq: z.int().positive(),
  event: subscriptionEventSchema,
  itemId: z.string(),
  attempts: z.int().positive(),
  lastError: z.string(),
  failedAt: z.iso.datetime({ offset: true }),
});
export type DeadLetterInfo = z.infer<typeof deadLetterSchema>;

export const deadLettersResponseSchema = z.object({ deadLetters: z.array(deadLetterSchema) });

/** The JSON body of every webhook POST. */
export const webhookPayloadSchema = z.object({
  subscriptionId: z.string(),
  seq: z.int().positive(),
  event: subscriptionEventSchema,
  item: contextItemSchema,
});
export type WebhookPayload = z.infer<typeof webhookPayloadSchema>;
