import type { OpenClawContextEngine, PluginLogger } from './openclaw-sdk.js';
import { readSentBlocks, withSentBlocks } from './sent-blocks.js';

/** The id the plugin registers its context engine under (`plugins.slots.contextEngine`). */
export const CONTEXT_ENGINE_ID = 'ctxbus';

/** Whose blocks a turn's messages are: the runtime session (a reset starts a new one), else its key. */
export function blockSession(context: {
  sessionId?: string | undefined;
  sessionKey?: string | undefined;
}): string | undefined {
  return context.sessionId?.trim() || context.sessionKey?.trim() || undefined;
}

/** How many committed turn keys the engine remembers (retries of a commit come within its turn). */
const COMMITS_KEPT = 1_000;

/** Runs OpenClaw's own compaction (`delegateCompactionToRuntime` of its plugin SDK). */
export type CompactionDelegate = (params: Record<string, unknown>) => Promise<unknown>;

/** OpenClaw's compaction, loaded from the host's SDK on first use (it is large). */
async function runtimeCompaction(): Promise<CompactionDelegate> {
  // Resolved from the OpenClaw that loads the plugin, never bundled (a name bundlers leave be).
  const specifier = ['openclaw', 'plugin-sdk', 'core'].join('/');
  const sdk = (await import(specifier)) as {
    delegateCompactionToRuntime: CompactionDelegate;
  };
  return sdk.delegateCompactionToRuntime;
}

/**
 * The ctxbus context engine: OpenClaw's legacy engine (messages as the session has them, no
 * ingestion of its own, OpenClaw's compaction) except that each earlier user message of the
 * session that was sent behind a team-context block is assembled with that block again
 * (sent-blocks.ts). Through the gateway the history holds bare prompts (the user message is
 * written when the turn is admitted, before the block exists), so without this no gateway turn's
 * request starts with the previous one's. It keeps no transcript of its own: committing a turn
 * only remembers its key, so a retried commit is a duplicate.
 */
export function ctxbusContextEngine(options: {
  stateDir: string;
  open: string;
  logger: PluginLogger;
  compaction?: () => Promise<CompactionDelegate>;
}): OpenClawContextEngine {
  const committed = new Set<string>();
  const compaction = options.compaction ?? runtimeCompaction;
  return {
    info: {
      id: CONTEXT_ENGINE_ID,
      name: 'ctxbus',
      version: '1.0.0',
      ownsCompaction: false,
      transcriptSemantics: {
        currentTurnFence: 'before-current-turn-entry-v1',
        turnAdvancementIdempotency: 'atomic-idempotent-v1',
      },
    },
    async ingest() {
      return { ingested: false };
    },
    async assemble(params) {
      const session = blockSession(params);
      if (!session) return { messages: params.messages, estimatedTokens: 0 };
      try {
        const blocks = readSentBlocks(options.stateDir, session);
        const { messages } = withSentBlocks(params.messages, blocks, options.open);
        return { messages, estimatedTokens: 0 };
      } catch (error) {
        options.logger.warn(
          `ctxbus: the session's team-context blocks were not restored: ${(error as Error).message}`,
        );
        return { messages: params.messages, estimatedTokens: 0 };
      }
    },
    async compact(params) {
      return (await compaction())(params);
    },
    async commitTurn(params) {
      if (committed.has(params.advancementKey)) return { status: 'duplicate' };
      committed.add(params.advancementKey);
      // A retry comes soon after its turn: the gateway's memory keeps the recent keys only.
      if (committed.size > COMMITS_KEPT)
        committed.delete(committed.values().next().value as string);
      return { status: 'committed' };
    },
  };
}
