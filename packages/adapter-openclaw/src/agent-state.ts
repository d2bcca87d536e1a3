import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { SessionState } from '@ctxbus/client/session';
import { readSessionState } from '@ctxbus/client/session';

/** What the plugin remembers per OpenClaw session between turns (and gateway restarts). */
export type AgentState = SessionState;

const safeName = (name: string) => name.replace(/[^A-Za-z0-9._-]/g, '_');

/**
 * A session's state file (the session kernel's state): one per session of an agent, so each
 * chat with an agent has its own "changed since your last turn" (a turn of one chat never takes
 * another's news). A turn without a session uses the agent's own file. The name keeps a
 * readable part of the session key and a hash of all of it (two keys never share a file).
 */
export function agentStateFile(stateDir: string, agentId: string, sessionKey?: string): string {
  const agent = safeName(agentId);
  if (!sessionKey || sessionKey === agentId) return join(stateDir, 'agents', `${agent}.json`);
  const digest = createHash('sha256').update(sessionKey).digest('hex').slice(0, 12);
  return join(stateDir, 'agents', agent, `${safeName(sessionKey).slice(-60)}-${digest}.json`);
}

/** A session's state; a missing or damaged file starts fresh rather than failing the turn. */
export function readAgentState(stateDir: string, agentId: string, sessionKey?: string): AgentState {
  return readSessionState(agentStateFile(stateDir, agentId, sessionKey));
}
