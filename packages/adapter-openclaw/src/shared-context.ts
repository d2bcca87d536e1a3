import { join } from 'node:path';
import type { CtxbusClient } from '@ctxbus/client';
import type { Logger } from '@ctxbus/core/contract';
import { CtxbusError } from '@ctxbus/core/contract';
import type { AnyToolDefinition } from '@ctxbus/mcp/tools';
import { defineTool } from '@ctxbus/mcp/tools';
import type { LlmCompleter, SharedContextPaths } from '@ctxbus/shared-context';
import {
  appendFeedback,
  bootstrapSharedContext,
  createSharedContextBridge,
  readSharedContextInjection,
  sharedContextPaths,
  writeAgentOutput,
} from '@ctxbus/shared-context';
import { z } from 'zod';
import type { OpenClawPluginApi } from './openclaw-sdk.js';
import type { ResolvedConfig } from './plugin-config.js';

// Seed 001's shared-context directory in OpenClaw: priorities (and today's roundtable) in each
// turn, tools that write through the directory's policy, and the bridge to the bus as a
// gateway service. All of it only with `sharedContextEnabled`.

export const SHARED_CONTEXT_TOOL_NAMES = [
  'shared_context_write_output',
  'shared_context_feedback',
  'shared_context_curate_daily',
  'shared_context_cross_signals_run',
] as const;

/** How long a turn waits for the directory (two small files) before going on without it. */
const READ_TIMEOUT_MS = 500;

export interface SharedContextSetup {
  paths: SharedContextPaths;
  /** Priorities and today's roundtable, capped; null when absent or too slow. */
  read(): Promise<string | null>;
}

/** The directory's paths, created (idempotently, never overwriting) when it is enabled. */
export function setUpSharedContext(
  config: ResolvedConfig,
  now: () => Date,
): SharedContextSetup | undefined {
  if (!config.sharedContext.enabled) return undefined;
  const paths = sharedContextPaths(
    config.sharedContext.dir ? { dir: config.sharedContext.dir } : {},
  );
  bootstrapSharedContext(paths);
  return {
    paths,
    async read() {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<null>((resolve) => {
        timer = setTimeout(() => resolve(null), READ_TIMEOUT_MS);
      });
      try {
        return await Promise.race([
          readSharedContextInjection(paths, {
            maxChars: config.sharedContext.maxInjectChars,
            now: now(),
          }),
          timeout,
        ]);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

const tagList = z
  .array(z.string().regex(/^[^\s,]{1,64}$/, 'a tag has no spaces or commas'))
  .max(16);

/** The agent id OpenClaw gave the tool's context (if any), and the id used without one. */
export interface ToolAgent {
  session: string | undefined;
  fallback: string;
}

/**
 * Who an output is written as (seed 001: "default from the session's agent, or explicit"):
 * the session's agent; an explicit `agent` when the session names none (OpenClaw gave no agent
 * id), or when it names the session's own. Writing as another agent of the session is refused:
 * each agent owns its `agent-outputs/<agent>/` folder.
 */
export function outputAgent(agent: ToolAgent, explicit: string | undefined) {
  const own = agent.session?.trim() || undefined;
  if (explicit === undefined || explicit === own) return own ?? agent.fallback;
  if (own === undefined) return explicit;
  throw new CtxbusError(
    'forbidden',
    `this session writes as agent "${own}": agent-outputs/${own}/ is its folder, so writing as "${explicit}" is refused (leave agent out)`,
    { details: { field: 'agent' } },
  );
}

/** The directory's tools for one agent: everything goes through the write policy. */
export function sharedContextTools(
  paths: SharedContextPaths,
  agent: ToolAgent,
  now: () => Date,
  /** Seed 001's semantic enhancer (the gateway's model), when enabled. */
  llm?: LlmCompleter,
): AnyToolDefinition[] {
  const agentId = agent.session?.trim() || agent.fallback;
  return [
    defineTool({
      name: 'shared_context_write_output',
      title: 'Write an output to the shared-context directory',
      description:
        'Publish a piece of your work for the other agents: it lands in shared-context/agent-outputs/<you>/<date>/ (and, through the bridge, on the team bus). Name the entities and topics it is about, so cross-signals can connect it to what other agents found.\nExample: {"title": "Weekly competitor scan", "body": "...markdown...", "entities": ["Acme Corp"], "tags": ["market"]}',
      input: z.object({
        agent: z
          .string()
          .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/i, 'an agent id: letters, digits, - and _')
          .optional()
          .describe('Who writes it; by default the agent of this session.'),
        title: z.string().trim().min(1).max(200),
        body: z.string().min(1).max(100_000).describe('Markdown.'),
        tags: tagList.optional(),
        entities: z.array(z.string().trim().min(1).max(120)).max(50).optional(),
      }),
      output: z.object({ path: z.string(), created: z.boolean() }),
      async run(input) {
        const written = writeAgentOutput(paths, {
          agent: outputAgent(agent, input.agent),
          title: input.title,
          body: input.body,
          ...(input.tags && { tags: input.tags }),
          ...(input.entities && { entities: input.entities }),
          source: 'openclaw tool shared_context_write_output',
          now: now(),
        });
        return {
          structured: { path: written.relPath, created: written.created },
          text: `${written.created ? 'Wrote' : 'Updated'} ${written.relPath}`,
        };
      },
    }),
    defineTool({
      name: 'shared_context_feedback',
      title: 'Record feedback',
      description:
        'Record a verdict on a piece of work (an output, a proposal, a decision) in the shared feedback inbox, which every agent reads as a constraint: approved means do more of this, rejected means stop.\nExample: {"verdict": "rejected", "subject": "Daily market digest format", "reason": "too long; 5 bullets max"}',
      input: z.object({
        verdict: z.enum(['approved', 'rejected']),
        subject: z.string().trim().min(1).max(300),
        reason: z.string().trim().max(2_000).optional(),
        ref: z
          .string()
          .max(1_024)
          .optional()
          .describe('The output it is about, relative to the shared-context directory.'),
        tags: tagList.optional(),
      }),
      output: z.object({ file: z.string() }),
      async run(input) {
        const file = appendFeedback(paths, {
          timestamp: now().toISOString(),
          agent: agentId,
          ...input,
        });
        return { structured: { file }, text: `Recorded in ${file}` };
      },
    }),
    defineTool({
      name: 'shared_context_curate_daily',
      title: 'Run the daily curator',
      description:
        "The curator's daily pass over the shared-context directory: merges staged proposals and the priorities inbox into priorities.md's canonical section, writes today's roundtable digest and cross-signals, archives merged staging files (never deletes). Safe to run again. Meant for a daily cron turn of the curator agent.",
      input: z.object({}),
      output: z.object({
        date: z.string(),
        stagedMerged: z.array(z.string()),
        inboxMerged: z.array(z.string()),
        roundtable: z.string(),
        crossSignals: z.string(),
        warnings: z.array(z.string()),
      }),
      async run() {
        // Loaded on use: the curator builds its digest with the tokenizer (megabytes), which a
        // turn never needs.
        const { curateDaily } = await import('@ctxbus/shared-context');
        const result = await curateDaily(paths, { now: now(), ...(llm && { llm }) });
        return {
          structured: result,
          text: `Curated ${result.date}: ${result.stagedMerged.length} staged and ${result.inboxMerged.length} inbox entries merged; roundtable ${result.roundtable}; cross-signals ${result.crossSignals}${result.warnings.length ? `; warnings: ${result.warnings.join('; ')}` : ''}`,
        };
      },
    }),
    defineTool({
      name: 'shared_context_cross_signals_run',
      title: 'Detect cross-signals',
      description:
        'Find entities and topics that two or more agents wrote about in the last days (agent-outputs), with which files and agents, and write cross-signals/<date>.json.',
      input: z.object({ windowDays: z.int().min(1).max(60).default(7) }),
      output: z.object({
        relPath: z.string().nullable(),
        signals: z.number(),
        warnings: z.array(z.string()),
      }),
      async run(input) {
        const { detectCrossSignals } = await import('@ctxbus/shared-context');
        const report = await detectCrossSignals(paths, {
          ...(llm && { llm }),
          now: now(),
          windowDays: input.windowDays,
        });
        const top = report.signals
          .slice(0, 10)
          .map(
            (signal) =>
              `- ${signal.label}: ${signal.agents.join(', ')} (${signal.sources.length} files)`,
          );
        return {
          structured: {
            relPath: report.relPath,
            signals: report.signals.length,
            warnings: report.warnings,
          },
          text: [`${report.signals.length} cross-signal(s) in ${report.relPath}`, ...top].join(
            '\n',
          ),
        };
      },
    }),
  ];
}

/**
 * Seed 001's semantic enhancer on the gateway's own model (`api.runtime.llm`: the agent's
 * provider and credentials, no key of ours), when `crossSignalsSemanticEnabled`. Undefined when
 * off, or when this OpenClaw has no model helper (then the deterministic result stands and a
 * warning says why).
 */
export function gatewayModel(
  api: Pick<OpenClawPluginApi, 'runtime' | 'logger'>,
  semantic: ResolvedConfig['sharedContext']['semantic'],
): LlmCompleter | undefined {
  if (!semantic.enabled) return undefined;
  const llm = api.runtime?.llm;
  if (!llm) {
    api.logger.warn(
      'ctxbus: crossSignalsSemanticEnabled is set, but this OpenClaw offers plugins no model (api.runtime.llm): cross-signals stay deterministic',
    );
    return undefined;
  }
  return {
    timeoutMs: semantic.timeoutMs,
    async complete(messages, signal) {
      const system = messages.filter((message) => message.role === 'system');
      const user = messages.filter((message) => message.role === 'user');
      const answer = await llm.complete({
        systemPrompt: system.map((message) => message.content).join('\n\n'),
        messages: [{ role: 'user', content: user.map((message) => message.content).join('\n\n') }],
        temperature: 0,
        purpose: 'ctxbus.cross-signals',
        signal,
      });
      return answer.text;
    },
  };
}

/**
 * The bridge between the directory and the bus, as a gateway service: started with the gateway,
 * stopped with it, its state in the plugin's state directory so a restart resumes.
 */
export function sharedContextBridgeService(
  paths: SharedContextPaths,
  client: CtxbusClient,
  config: ResolvedConfig,
  logger: Logger,
) {
  const bridge = createSharedContextBridge({
    paths,
    client,
    agentRuntime: 'openclaw',
    stateFile: join(config.stateDir, 'shared-context-bridge.json'),
    logger,
  });
  return {
    id: 'ctxbus-shared-context-bridge',
    start: () => bridge.start(),
    stop: () => bridge.stop(),
  };
}
