import { join } from 'node:path';

/** Where seed 003's files live in an agent's workspace. */
export interface HandoffPaths {
  /** `<workspace>/.context-bus` */
  dir: string;
  handoff: string;
  summary: string;
  history: string;
  lock: string;
  /** Written by a switch that waits for a final heartbeat; the next heartbeat removes it. */
  heartbeatRequest: string;
  /** The latest usage each model's runtime reported (Claude Code's status line, OpenClaw). */
  usage: string;
}

export function handoffPaths(workspace: string): HandoffPaths {
  const dir = join(workspace, '.context-bus');
  return {
    dir,
    handoff: join(dir, 'handoff.json'),
    summary: join(dir, 'rolling-summary.md'),
    history: join(dir, 'history.jsonl'),
    lock: join(dir, '.lock'),
    heartbeatRequest: join(dir, 'heartbeat-request.json'),
    usage: join(dir, 'usage.json'),
  };
}
