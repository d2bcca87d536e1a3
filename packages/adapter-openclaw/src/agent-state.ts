import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '@ctxbus/client/files';

/** What the plugin remembers per OpenClaw agent between turns (and gateway restarts). */
export interface AgentState {
  /** Sequence of the newest item this agent has been shown. */
  lastSeenSeq: number;
  /** Turns recorded so far. */
  turns: number;
  /** Whether the "hub unreachable" warning was logged since the hub last answered. */
  warnedUnreachable: boolean;
  /** Sequence of the last model switch (seed 003 handoff) this agent was told about. */
  handoffSwitchSeen: number;
  /** Prompts built so far; numbers turn contexts when OpenClaw gives no run id. */
  prompts: number;
  /** How the agent's last turn ended (`agent_end`), if it did. */
  lastOutcome: string;
}

function fileFor(stateDir: string, agentId: string): string {
  return join(stateDir, 'agents', `${agentId.replace(/[^A-Za-z0-9._-]/g, '_')}.json`);
}

const count = (value: unknown): number =>
  Number.isInteger(value) && (value as number) >= 0 ? (value as number) : 0;

/** An agent's state; a missing or damaged file starts fresh rather than failing the turn. */
export function readAgentState(stateDir: string, agentId: string): AgentState {
  let raw: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(readFileSync(fileFor(stateDir, agentId), 'utf8'));
    if (parsed !== null && typeof parsed === 'object') raw = parsed as Record<string, unknown>;
  } catch {
    // fresh state
  }
  return {
    lastSeenSeq: count(raw.lastSeenSeq),
    turns: count(raw.turns),
    warnedUnreachable: raw.warnedUnreachable === true,
    handoffSwitchSeen: count(raw.handoffSwitchSeen),
    prompts: count(raw.prompts),
    lastOutcome: typeof raw.lastOutcome === 'string' ? raw.lastOutcome : '',
  };
}

/** Writes atomically (temp file + rename), so a crash never leaves half a file. */
export function writeAgentState(stateDir: string, agentId: string, state: AgentState): void {
  const file = fileFor(stateDir, agentId);
  mkdirSync(join(stateDir, 'agents'), { recursive: true, mode: 0o700 });
  writeFileAtomic(file, JSON.stringify(state), { mode: 0o600 });
}
