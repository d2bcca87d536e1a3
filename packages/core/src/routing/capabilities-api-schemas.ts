import { z } from 'zod';
import { capabilitiesStatusSchema } from '../items/api-schemas.js';
import { teamIdSchema } from '../items/context-item.js';
import { capabilitySchema, TRUST_LEVELS } from './capabilities.js';
import { presenceInstanceSchema } from './presence.js';

// The wire shape of `GET /api/capabilities`: the hub's matrix with each runtime's live
// presence. In the contract entry: it loads no YAML (parse-capabilities.ts does).

export const capabilitiesQuerySchema = z.strictObject({
  team: teamIdSchema.optional().meta({
    description:
      "Admin tokens: whose presence to show (runtime tokens always see their own team's; another team is refused).",
  }),
});

export const runtimePresenceViewSchema = z.object({
  online: z.boolean(),
  workers: z.int().nonnegative(),
  capacity: z.int().nonnegative(),
  instances: z.array(presenceInstanceSchema.omit({ runtime: true })),
});

export const capabilitiesRuntimeSchema = z.object({
  id: z.string(),
  declared: z.boolean().meta({
    description: 'False for a runtime with live instances that the file does not declare.',
  }),
  description: z.string().nullable(),
  type: z.string().nullable(),
  adapter: z.string().nullable(),
  trust: z.enum(TRUST_LEVELS).nullable(),
  endpoint: z.string().nullable(),
  capabilities: z.record(z.string(), capabilitySchema),
  presence: runtimePresenceViewSchema,
});

export const capabilitiesResponseSchema = z.object({
  team: teamIdSchema.nullable().meta({
    description: 'The team whose presence is shown (null: an admin token without ?team=).',
  }),
  source: capabilitiesStatusSchema,
  capabilityNames: z.array(z.string()).meta({
    description: 'Every capability the matrix names: the five well-known ones, then its own.',
  }),
  runtimes: z.array(capabilitiesRuntimeSchema).meta({
    description: 'Declared runtimes in file order, then undeclared ones with live instances by id.',
  }),
  remoteExecution: z
    .object({ allow: z.array(z.string()), workdir: z.string().nullable() })
    .nullable(),
  approvers: z
    .object({
      runtimes: z.array(z.string()),
      source: z.enum(['file', 'default']),
      caller: z.object({ runtime: z.string().nullable(), approver: z.boolean() }).meta({
        description:
          "The caller's own runtime (null: an admin token) and whether it may decide (an admin token always may; an approver runtime, on tasks it is no party to).",
      }),
    })
    .meta({
      description:
        "The runtimes whose tokens may approve or deny a command (never the task's origin or the runtime that runs it), and whether capabilities.yaml named them or the default (cli, telegram, web) applies. Admin tokens may always decide.",
    }),
});

export type CapabilitiesResponse = z.infer<typeof capabilitiesResponseSchema>;
export type CapabilitiesRuntime = z.infer<typeof capabilitiesRuntimeSchema>;
