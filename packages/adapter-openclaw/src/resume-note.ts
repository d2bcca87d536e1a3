import { handoffPaths, readHandoff, readHistory, resumeNote } from '@ctxbus/handoff';
import type { PluginLogger } from './openclaw-sdk.js';

/**
 * When the agent's workspace holds a seed 003 handoff whose newest switch this agent has not
 * been told about: the note to start its turn with ("Continuing from X's work on ..."). A
 * handoff that fails its checks is logged and skipped; the turn goes on.
 */
export function handoffResume(
  workspaceDir: string | undefined,
  seen: number,
  logger: PluginLogger,
): { note: string; switchSequence: number } | null {
  if (!workspaceDir) return null;
  const paths = handoffPaths(workspaceDir);
  try {
    const lastSwitch = readHistory(paths)
      .filter((entry) => entry.event.startsWith('switch'))
      .at(-1);
    if (!lastSwitch || lastSwitch.sequence <= seen) return null;
    const handoff = readHandoff(paths);
    const note = handoff ? resumeNote(handoff) : null;
    return note ? { note, switchSequence: lastSwitch.sequence } : null;
  } catch (error) {
    logger.warn(`ctxbus: the handoff in ${paths.dir} is unusable: ${(error as Error).message}`);
    return null;
  }
}
