import { z } from 'zod';

// Seed 003's handoff.json, schema v2, field for field: what an agent was doing, on which model,
// and what comes next, so that another model picks the work up where this one stopped.

/**
 * A model's name (`opus`, `gpt-5-codex`, `openrouter/some model`): what a person would type,
 * without control or invisible characters (a newline in it would forge a line of every note
 * and item that names the model).
 */
export const modelNameSchema = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[^\p{C}]+$/u, 'a model name has no control or invisible characters');

export const HANDOFF_SCHEMA_VERSION = 2;

const textList = z.array(z.string().max(2_000)).max(200);

export const handoffSchema = z.strictObject({
  schema_version: z.literal(HANDOFF_SCHEMA_VERSION),
  /** Incremented under the lock by every write: a lost or repeated write shows as a gap. */
  sequence: z.int().nonnegative(),
  timestamp: z.iso.datetime({ offset: true }),
  /** `sha256:` + the hex SHA-256 of the document's canonical JSON without this field. */
  checksum: z.string().regex(/^sha256:[0-9a-f]{64}$/, 'a checksum is sha256:<64 hex digits>'),
  /** The model that wrote it. */
  author: modelNameSchema,
  /** Whether the state is complete enough for another model to resume from. */
  handoff_ready: z.boolean(),
  model: z.strictObject({
    current: modelNameSchema,
    previous: modelNameSchema.nullable(),
    usage_percent: z.number().min(0).max(100).nullable(),
    switch_reason: z.string().max(500).nullable(),
  }),
  task: z.strictObject({
    description: z.string().max(2_000),
    status: z.string().max(100),
    project: z.string().max(1_000).nullable(),
  }),
  context: z.strictObject({
    recent_actions: textList,
    decisions: textList,
    next_steps: textList,
    blockers: textList,
  }),
  files_touched: z.array(z.string().max(4_096)).max(500),
});

export type Handoff = z.infer<typeof handoffSchema>;

/** What a writer supplies: everything but the fields the file maintains itself. */
export type HandoffContent = Omit<
  Handoff,
  'schema_version' | 'sequence' | 'timestamp' | 'checksum'
>;
