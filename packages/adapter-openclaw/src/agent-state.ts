import { join } from 'node:path';
import type { SessionState } from '@ctxbus/client/session';
import { readSessionState } from '@ctxbus/client/session';

/** What the plugin remembers per OpenClaw agent between turns (and gateway restarts). */
export type AgentState = SessionState;

/** An agent's state file (the session kernel's state, one file per OpenClaw agent). */
export function agentStateFile(stateDir: string, agentId: string): string {
  return join(stateDir, 'agents', `${agentId.replace(/[^A-Za-z0-9._-]/g, '_')}.json`);
}

/** An agent's state; a missing or damaged file starts fresh rather than failing the turn. */
export function readAgentState(stateDir: string, agentId: string): AgentState {
  return readSessionState(agentStateFile(stateDir, agentId));
}
