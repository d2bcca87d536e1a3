import { z } from 'zod';
import { runtimeNameSchema } from '../items/context-item.js';

// Presence: workers and adapters announce themselves to a hub and heartbeat; the router reads
// the summary (`summarizePresence`). The wire shapes of POST/DELETE /api/presence are here.

export const PRESENCE_KINDS = ['worker', 'adapter'] as const;
export type PresenceKind = (typeof PRESENCE_KINDS)[number];

/** Seconds an announcement lasts when it does not say (renew at a third of it). */
export const DEFAULT_PRESENCE_TTL_SECONDS = 30;
export const MIN_PRESENCE_TTL_SECONDS = 1;
export const MAX_PRESENCE_TTL_SECONDS = 600;
/** Capability names one instance may list. */
export const MAX_PRESENCE_CAPABILITIES = 64;
/** The most work one instance may say it takes at once. */
export const MAX_PRESENCE_CAPACITY = 10_000;

/** A client-chosen id for one running worker or adapter (a host and pid, a UUID...). */
export const presenceInstanceIdSchema = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/,
    'an instance id is 1-128 letters, digits, dots, colons, dashes or underscores, starting with a letter or digit',
  );

const capabilityNameSchema = z
  .string()
  .regex(/^[a-z][a-z0-9_-]{0,62}$/, 'a capability name (lower-case letters, digits, - and _)');

/** Body of `POST /api/presence`. The runtime is the token's; a body naming another is refused. */
export const presenceAnnounceRequestSchema = z.strictObject({
  instanceId: presenceInstanceIdSchema,
  kind: z.enum(PRESENCE_KINDS),
  capabilities: z
    .array(capabilityNameSchema)
    .max(MAX_PRESENCE_CAPABILITIES)
    .optional()
    .meta({ description: 'Capabilities this instance serves (default: none named).' }),
  capacity: z.int().min(0).max(MAX_PRESENCE_CAPACITY).optional().meta({
    description: 'Tasks it takes at once (default: 1 for a worker, 0 for an adapter).',
  }),
  ttlSeconds: z
    .int()
    .min(MIN_PRESENCE_TTL_SECONDS)
    .max(MAX_PRESENCE_TTL_SECONDS)
    .default(DEFAULT_PRESENCE_TTL_SECONDS)
    .meta({ description: 'Seconds until the entry expires unless announced again.' }),
  runtime: runtimeNameSchema.optional().meta({
    description: "Must be the token's runtime when given (the hub never announces as another).",
  }),
});

export type PresenceAnnounceRequest = z.input<typeof presenceAnnounceRequestSchema>;

export const presenceAnnounceResponseSchema = z.object({
  instanceId: presenceInstanceIdSchema,
  runtime: runtimeNameSchema,
  expiresAt: z.iso.datetime({ offset: true }),
});

export const presenceInstanceParamsSchema = z.strictObject({
  instanceId: presenceInstanceIdSchema,
});

/** One live instance, as the hub shows it. */
export const presenceInstanceSchema = z.object({
  instanceId: presenceInstanceIdSchema,
  runtime: runtimeNameSchema,
  kind: z.enum(PRESENCE_KINDS),
  capabilities: z.array(z.string()),
  capacity: z.int().nonnegative(),
  lastSeen: z.iso.datetime({ offset: true }),
  expiresAt: z.iso.datetime({ offset: true }),
});

export type PresenceInstance = z.infer<typeof presenceInstanceSchema>;

/** A runtime's presence as the router reads it. */
export interface RuntimePresenceEntry {
  /** Some instance of it (worker or adapter) is connected. */
  online: boolean;
  /** Worker instances connected. */
  workers: number;
  /** Tasks its instances take at once, summed. */
  capacity: number;
}

/** The capacity an instance counts for when it does not say: 1 for a worker, 0 for an adapter. */
export function defaultCapacity(kind: PresenceKind): number {
  return kind === 'worker' ? 1 : 0;
}

/**
 * Live instances -> each runtime's presence, for the router: `online` when any instance is
 * there, `workers` the worker instances, `capacity` the sum of their capacities. Runtimes with
 * no instance are absent (the router treats absent as offline).
 */
export function summarizePresence(
  instances: readonly Pick<PresenceInstance, 'runtime' | 'kind' | 'capacity'>[],
): Record<string, RuntimePresenceEntry> {
  const summary: Record<string, RuntimePresenceEntry> = {};
  for (const instance of instances) {
    const entry = Object.hasOwn(summary, instance.runtime)
      ? (summary[instance.runtime] as RuntimePresenceEntry)
      : { online: true, workers: 0, capacity: 0 };
    if (instance.kind === 'worker') entry.workers += 1;
    entry.capacity += instance.capacity;
    summary[instance.runtime] = entry;
  }
  return summary;
}
