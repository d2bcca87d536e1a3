import type { ResolvedConfig } from './plugin-config.js';

/**
 * The shared-context directory's text for a turn (priorities, today's roundtable), when the
 * directory is enabled. Filled in by the shared-context package integration.
 */
export function sharedContextInjector(
  config: ResolvedConfig,
): ((agentId: string) => string | null) | undefined {
  if (!config.sharedContext.enabled) return undefined;
  return undefined;
}
