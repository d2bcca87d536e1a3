import { z } from 'zod';
import { tokenInfoSchema } from '../items/api-schemas.js';
import { runtimeNameSchema } from '../items/context-item.js';
import { queryInt } from '../shared/query-int.js';

// The schemas of routes whose shapes no other module names: they live with the wire table.

export const listTokensResponseSchema = z.object({ tokens: z.array(tokenInfoSchema) });

export const revokeTokenResponseSchema = z.object({ token: tokenInfoSchema });

export const streamStatsSchema = z.object({
  open: z.int().nonnegative(),
  maxPendingBytes: z.int().positive(),
  ended: z.object({ slow_reader: z.int().nonnegative(), token_revoked: z.int().nonnegative() }),
  closing: z.int().nonnegative().meta({
    description:
      'Ended streams whose connections are still open (their readers have a grace period to take what is queued); they count against the stream limits until closed.',
  }),
  catchUpReads: z.int().nonnegative().meta({
    description: 'Store reads that streams made to catch up (since or Last-Event-ID), in all.',
  }),
});

export const taskStatsSchema = z.object({
  claims: z
    .object({
      attempts: z.int().nonnegative(),
      taken: z.int().nonnegative(),
      takenWithCompletion: z.int().nonnegative(),
      wakes: z.int().nonnegative(),
      parked: z.int().nonnegative(),
    })
    .meta({
      description:
        "Claim attempts (store claims) this hub made, how many took a task (of which a worker's completion took `takenWithCompletion`, its `next`), how many waiting claims a new task woke, and how many wait now.",
    }),
  relay: z.object({
    failures: z
      .int()
      .nonnegative()
      .meta({ description: 'Relay passes that failed (each retried).' }),
    batches: z.int().nonnegative().meta({ description: 'Batches of task events relayed.' }),
    events: z.int().nonnegative().meta({ description: 'Task events relayed in them.' }),
  }),
});

export const deleteSubscriptionResponseSchema = z.object({ deleted: z.literal(true) });

export const deadLettersQuerySchema = z.strictObject({
  after: queryInt(0).optional(),
  limit: queryInt(1, 500).default(100),
});

export const leavePresenceResponseSchema = z.object({
  instanceId: z.string(),
  removed: z.literal(true),
});

export const openApiDocumentSchema = z.record(z.string(), z.unknown());

export const agentCardSchema = z
  .looseObject({
    name: z.string(),
    description: z.string(),
    version: z.string(),
    supportedInterfaces: z.array(
      z.object({ url: z.string(), protocolBinding: z.string(), protocolVersion: z.string() }),
    ),
    skills: z.array(z.looseObject({ id: z.string(), name: z.string() })),
  })
  .meta({ description: 'An A2A 1.0 Agent Card (proto3 JSON).' });

export const runtimeParamsSchema = z.strictObject({ runtime: runtimeNameSchema });

export const jsonRpcResponseSchema = z
  .object({
    jsonrpc: z.literal('2.0'),
    id: z.union([z.string(), z.number(), z.null()]),
    result: z.unknown().optional(),
    error: z
      .object({ code: z.int(), message: z.string(), data: z.unknown().optional() })
      .optional(),
  })
  .meta({ description: 'A JSON-RPC 2.0 response: `result`, or `error` with an A2A code.' });
