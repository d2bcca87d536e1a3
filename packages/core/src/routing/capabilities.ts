import { z } from 'zod';
import { MAX_TOKEN_BUDGET } from '../items/api-schemas.js';
import { runtimeNameSchema } from '../items/context-item.js';

// capabilities.yaml (seed 000, question 3): what each runtime can do, and how: the schema and
// pure helpers. parse-capabilities.ts reads the YAML (errors name FILE:LINE:COL).

/** How a runtime does something; absent means `unavailable`. */
export const CAPABILITY_MODES = [
  'native',
  'via-api',
  'via-mcp',
  'sandboxed',
  'unavailable',
] as const;
export type CapabilityMode = (typeof CAPABILITY_MODES)[number];

/** The capabilities every runtime is described by; files may name others too. */
export const WELL_KNOWN_CAPABILITIES = [
  'code_execution',
  'file_operations',
  'search',
  'communication',
  'memory',
] as const;

export const TRUST_LEVELS = ['trusted', 'standard', 'restricted'] as const;

/** A capability name in the file: lower case, letters, digits, - and _ (runtimes: runtimeNameSchema). */
export const matrixNameSchema = z
  .string()
  .regex(/^[a-z][a-z0-9_-]{0,62}$/, 'a lower-case name (letters, digits, - and _)');

// The descriptions below are what editors show on hover (capabilitiesJsonSchema).
const limitsSchema = z
  .strictObject({
    network: z.boolean().optional().meta({
      description:
        'Whether the work may reach the network; false: a task that needs the network is routed elsewhere.',
    }),
    seconds: z.number().int().positive().max(86_400).optional().meta({
      description: 'Longest it may run; a task that needs longer is routed elsewhere.',
    }),
    commands: z
      .array(z.string().min(1))
      .max(256)
      .optional()
      .meta({ description: 'The only commands it may run (argv strings, no shell).' }),
  })
  .meta({ description: 'What the capability is limited to.' });

export const capabilitySchema = z
  .strictObject({
    mode: z.enum(CAPABILITY_MODES).meta({
      description:
        'native: the runtime does it itself; via-api / via-mcp: it calls a service or MCP server that can; sandboxed: it can, inside a sandbox with the limits given; unavailable: it cannot.',
    }),
    via: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .meta({ description: 'The tool, API or MCP server it goes through.' }),
    target: runtimeNameSchema.optional().meta({
      description:
        'For via-api / via-mcp on another runtime: that runtime (the router proxies the task to it first).',
    }),
    limits: limitsSchema.optional(),
    notes: z.string().max(2_000).optional(),
  })
  .meta({ description: 'How a runtime does one capability.' });

/** The context formats a runtime can ask for (`context.format`; see core's resolvers). */
export const CONTEXT_FORMATS = ['markdown', 'text', 'structured'] as const;
export type ContextFormatName = (typeof CONTEXT_FORMATS)[number];

export const runtimeEntrySchema = z
  .strictObject({
    description: z.string().min(1).max(500).meta({ description: 'What this runtime is.' }),
    type: z.string().min(1).max(100).optional(),
    adapter: z.string().min(1).max(200).optional(),
    trust: z.enum(TRUST_LEVELS).default('standard').meta({
      description:
        'restricted: never receives a proxied command, and a proxy it asks for needs a human approval.',
    }),
    endpoint: z.string().min(1).max(2_000).optional(),
    context: z
      .strictObject({
        format: z.enum(CONTEXT_FORMATS),
        tokenBudget: z.int().min(100).max(MAX_TOKEN_BUDGET).optional(),
      })
      .optional()
      .meta({
        description:
          "How it wants its shared context: `markdown` (Claude Code's), `text` (one line per entry, OpenClaw's) or `structured` (sections with their items, the web's), and the budget a bundle gets when the caller does not say. Absent: the built-in default for claude-code, openclaw and web, else Markdown within 4,000 tokens.",
      }),
    capabilities: z.record(matrixNameSchema, capabilitySchema).default({}).meta({
      description:
        'code_execution, file_operations, search, communication, memory, or your own names; absent means unavailable.',
    }),
  })
  .meta({ description: 'One runtime and what it can do.' });

/**
 * Who may approve or deny a command when `approvers` is not in the file: the channels a person
 * answers through (the CLI in a terminal, the Telegram bot, the dashboard), never an agent
 * runtime. Each still needs a token an admin minted for that runtime name; a team that runs an
 * agent under one of these names must list its approvers explicitly (or `approvers: []`: admin
 * tokens only).
 */
export const DEFAULT_APPROVERS = ['cli', 'telegram', 'web'] as const;

export const capabilitiesFileSchema = z
  .strictObject({
    version: z.literal(1),
    // A runtime is named as a token names it: one rule, or a declared runtime no token can be.
    runtimes: z.record(runtimeNameSchema, runtimeEntrySchema),
    approvers: z.array(runtimeNameSchema).max(64).optional().meta({
      description:
        "The runtimes people approve and deny commands through (default: cli, telegram, web; [] for admin tokens only). Never an agent's runtime: a runtime listed here can release any command a worker asks about, except the task's own origin and executor.",
    }),
    remote_execution: z
      .strictObject({
        allow: z.array(z.string().min(1)).max(1_000).default([]).meta({
          description:
            'Commands a remote-execution worker may run, exactly as written (argv, no shell).',
        }),
        workdir: z
          .string()
          .min(1)
          .optional()
          .meta({ description: 'The directory commands run in (confined to it).' }),
      })
      .optional(),
  })
  .meta({
    title: 'ctxbus capabilities.yaml',
    description: 'What each runtime can do, and how; ctxbus routes tasks by it (routeTask).',
  });

export type CapabilitiesFile = z.output<typeof capabilitiesFileSchema>;
export type Capability = z.output<typeof capabilitySchema>;

/**
 * The JSON Schema of capabilities.yaml for editors (the input side: defaults are optional).
 * Committed as `schemas/capabilities.schema.json`; `ctxbus capabilities schema` prints it.
 */
export function capabilitiesJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(capabilitiesFileSchema, { io: 'input' }) as Record<string, unknown>;
}

/** The agent runtimes ctxbus connects (`ctxbus connect`): never a person's channel. */
export const AGENT_RUNTIMES = ['claude-code', 'codex', 'openclaw'] as const;

/**
 * The approvers that are agent runtimes: each lets its agents release any command a worker
 * asks about (the hub takes the file as written; the hub and `capabilities check` warn).
 */
export function agentApprovers(matrix: CapabilitiesFile): string[] {
  return approversOf(matrix).runtimes.filter((runtime) =>
    (AGENT_RUNTIMES as readonly string[]).includes(runtime),
  );
}

/** The runtimes whose tokens may approve or deny commands, and whether the file said so. */
export function approversOf(matrix: CapabilitiesFile): {
  runtimes: string[];
  source: 'file' | 'default';
} {
  return matrix.approvers
    ? { runtimes: [...new Set(matrix.approvers)], source: 'file' }
    : { runtimes: [...DEFAULT_APPROVERS], source: 'default' };
}

/**
 * Why `runtime` may not decide for a person (approve or deny a command, keep a conflict's
 * value), or null when it may: it must be an approver runtime and not restricted. The one rule
 * every people-only decision checks.
 */
export function personRefusal(
  matrix: CapabilitiesFile,
  runtime: string,
): {
  role: 'not_an_approver' | 'restricted';
  approvers: string[];
  source: 'file' | 'default';
  declared: boolean;
} | null {
  const { runtimes, source } = approversOf(matrix);
  const declared = Object.hasOwn(matrix.runtimes, runtime);
  if (!runtimes.includes(runtime)) {
    return { role: 'not_an_approver', approvers: runtimes, source, declared };
  }
  if (declared && matrix.runtimes[runtime]?.trust === 'restricted') {
    return { role: 'restricted', approvers: runtimes, source, declared };
  }
  return null;
}

/** A runtime's mode for a capability (absent: unavailable). */
export function capabilityMode(
  matrix: CapabilitiesFile,
  runtime: string,
  capability: string,
): CapabilityMode {
  const entry = Object.hasOwn(matrix.runtimes, runtime) ? matrix.runtimes[runtime] : undefined;
  const found =
    entry && Object.hasOwn(entry.capabilities, capability)
      ? entry.capabilities[capability]
      : undefined;
  return found?.mode ?? 'unavailable';
}

/** The capability names a matrix speaks of: the well-known ones first, then the file's own. */
export function capabilityNames(matrix: CapabilitiesFile): string[] {
  const named = new Set<string>(WELL_KNOWN_CAPABILITIES);
  for (const entry of Object.values(matrix.runtimes)) {
    for (const name of Object.keys(entry.capabilities)) named.add(name);
  }
  return [...named];
}
