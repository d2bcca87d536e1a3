import { z } from 'zod';
import { teamIdSchema } from '../items/context-item.js';
import { queryInt } from '../shared/query-int.js';
import { AUDIT_KINDS } from './audit-chain.js';

// The wire shapes of /api/audit: a team's hash-chained audit log, read page by page, and its
// verification (the records and the chain are described in audit-chain.ts).

/** Most records one page of GET /api/audit returns. */
export const MAX_AUDIT_PAGE = 1_000;

const hashSchema = z.string().regex(/^[0-9a-f]{64}$/, 'a SHA-256 hex digest');

const teamQuery = teamIdSchema.optional().meta({
  description:
    "Admin tokens: whose log (required). Runtime tokens read their own team's; another team is refused.",
});

export const auditRecordSchema = z.object({
  seq: z.int().positive(),
  teamId: z.string(),
  at: z.string(),
  kind: z.enum(AUDIT_KINDS),
  actor: z.string(),
  subject: z.string(),
  data: z.record(z.string(), z.unknown()),
  prevHash: hashSchema,
  hash: hashSchema,
});

export const listAuditQuerySchema = z.strictObject({
  team: teamQuery,
  after: queryInt(0)
    .default(0)
    .meta({ description: 'Records after this sequence (the last `seq` of the previous page).' }),
  limit: queryInt(1, MAX_AUDIT_PAGE).default(100),
});
export const listAuditResponseSchema = z.object({
  team: z.string(),
  records: z.array(auditRecordSchema),
  /** The `after` of the next page; null on the last page. */
  nextAfter: z.int().nullable(),
});

export const verifyAuditQuerySchema = z.strictObject({ team: teamQuery });
const auditAnchorSchema = z
  .object({
    checkpoint: z
      .object({
        seq: z.int().nonnegative(),
        hash: hashSchema,
        at: z.string(),
        ageSeconds: z.number().nonnegative(),
      })
      .nullable()
      .meta({
        description:
          "The latest checkpoint of the team's chain this hub signed, outside the database; null when it has none.",
      }),
    unsigned: z.int().nonnegative().meta({
      description: 'Checkpoint lines whose signature does not hold (someone edited the file).',
    }),
  })
  .nullable()
  .meta({
    description:
      'What anchors the chain outside the database (null: this hub keeps no checkpoints). Records after the checkpoint are covered by the chain alone.',
  });

export const verifyAuditResponseSchema = z.union([
  z.object({
    team: z.string(),
    ok: z.literal(true),
    records: z.int().nonnegative(),
    head: hashSchema.meta({ description: 'The hash of the newest record (64 zeros when none).' }),
    anchor: auditAnchorSchema.optional(),
  }),
  z.object({
    team: z.string(),
    ok: z.literal(false),
    records: z.int().nonnegative(),
    seq: z.int().positive().meta({ description: 'The first record that does not hold.' }),
    reason: z.string(),
    anchor: auditAnchorSchema.optional(),
  }),
]);
export type VerifyAuditResponse = z.infer<typeof verifyAuditResponseSchema>;
export type ListAuditResponse = z.infer<typeof listAuditResponseSchema>;
