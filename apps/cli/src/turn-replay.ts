import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { safeFileName, turnLogPaths } from '@ctxbus/client/turn-log';
import type { BuiltTurnContext, TokenCounter, TurnContextRecord } from '@ctxbus/core';
import {
  buildTurnContext,
  CtxbusError,
  canonicalJson,
  estimateTokenCounter,
  o200kTokenCounter,
  turnContextRecordSchema,
  utf8EstimateTokenCounter,
} from '@ctxbus/core';

// `ctxbus replay`: rebuilds each recorded turn of a session from its snapshot file alone (no
// hub, no network) and checks the rebuilt context against what was recorded, naming the first
// difference when they part.

const COUNTERS: readonly TokenCounter[] = [
  estimateTokenCounter,
  utf8EstimateTokenCounter,
  o200kTokenCounter,
];

export interface TurnReplay {
  line: number;
  turnId: string | null;
  contextHash: string | null;
  proven: boolean;
  /** The first difference between the record and the rebuild (null when proven). */
  difference: string | null;
}

export interface SessionReplay {
  agentId: string;
  sessionId: string;
  path: string;
  turns: TurnReplay[];
}

export interface ReplayOptions {
  dataDir: string;
  sessionId: string;
  agentId?: string;
  turnId?: string;
}

/** The session's snapshot file: under the agent given, else the one agent that has it. */
function sessionFile(options: ReplayOptions): { agentId: string; path: string } {
  if (options.agentId !== undefined) {
    const path = turnLogPaths(options.dataDir, options.agentId, options.sessionId).context;
    if (!existsSync(path)) {
      throw new CtxbusError(
        'not_found',
        `no turn context recorded for session ${options.sessionId} of agent ${options.agentId} (${path})`,
      );
    }
    return { agentId: options.agentId, path };
  }
  const agentsDir = join(options.dataDir, 'agents');
  const file = `${safeFileName(options.sessionId)}.jsonl`;
  const found = (existsSync(agentsDir) ? readdirSync(agentsDir) : [])
    .sort()
    .filter((agent) => existsSync(join(agentsDir, agent, 'context', file)));
  const [agentId] = found;
  if (agentId === undefined) {
    throw new CtxbusError(
      'not_found',
      `no turn context recorded for session ${options.sessionId} under ${agentsDir}`,
    );
  }
  if (found.length > 1) {
    throw new CtxbusError(
      'validation_failed',
      `session ${options.sessionId} is recorded for agents ${found.join(', ')}; name one with --agent`,
    );
  }
  return { agentId, path: join(agentsDir, agentId, 'context', file) };
}

const short = (value: unknown) => {
  const text = typeof value === 'string' ? value : canonicalJson(value);
  return text.length > 120 ? `${text.slice(0, 119)}…` : text;
};

/** The first place where the rebuild differs from the record, or null. */
export function firstDifference(
  record: TurnContextRecord,
  rebuilt: BuiltTurnContext,
): string | null {
  const recorded = record.trace.parts;
  for (let index = 0; index < Math.max(recorded.length, rebuilt.parts.length); index++) {
    const was = recorded[index];
    const now = rebuilt.parts[index];
    if (canonicalJson(was) === canonicalJson(now)) continue;
    const name = (part: typeof was) =>
      part
        ? `${part.source} ${part.id}: ${part.mode}, ${part.tokens} tokens, sha256 ${part.hash.slice(0, 12)}`
        : 'absent';
    return `part ${index + 1} — recorded ${name(was)}; rebuilt ${name(now)}`;
  }
  const [was, now] = [record.trace.trim, rebuilt.trim];
  // Turns recorded before `trimmed` counted the window and the tool cap say it only when
  // maxContextTokens acted (the hash never covered it). Such a record is proven too: its
  // `trimmed` is what its own actions meant then, and the actions are compared one by one below.
  const trimmedThen = was.actions.some((action) => action.reason === 'budget');
  const sameTrimmed = (recorded: boolean) => recorded === now.trimmed || recorded === trimmedThen;
  for (const key of ['trimmed', 'tokensBeforeTrim', 'overBudget'] as const) {
    if (key === 'trimmed' ? !sameTrimmed(was.trimmed) : was[key] !== now[key])
      return `trim note ${key} — recorded ${was[key]}; rebuilt ${now[key]}`;
  }
  for (let index = 0; index < Math.max(was.actions.length, now.actions.length); index++) {
    const [a, b] = [was.actions[index], now.actions[index]];
    if (canonicalJson(a) !== canonicalJson(b)) {
      return `trim action ${index + 1} — recorded ${a ? short(a) : 'absent'}; rebuilt ${b ? short(b) : 'absent'}`;
    }
  }
  for (const key of ['sessionId', 'turnId', 'sourceCounts', 'trimmed', 'contextHash'] as const) {
    if (key === 'trimmed' && sameTrimmed(record.snapshot.trimmed)) continue;
    if (canonicalJson(record.snapshot[key]) !== canonicalJson(rebuilt.snapshot[key])) {
      return `snapshot.${key} — recorded ${short(record.snapshot[key])}; rebuilt ${short(rebuilt.snapshot[key])}`;
    }
  }
  if (record.agentId !== record.input.agentId) {
    return `agentId — recorded ${record.agentId}; the input names ${record.input.agentId}`;
  }
  return null;
}

function replayLine(text: string, line: number): TurnReplay {
  const failed = (difference: string, record?: TurnContextRecord): TurnReplay => ({
    line,
    turnId: record?.snapshot.turnId ?? null,
    contextHash: record?.snapshot.contextHash ?? null,
    proven: false,
    difference,
  });
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return failed('the line is not JSON (torn or edited)');
  }
  const parsed = turnContextRecordSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return failed(`not a turn record: ${issue?.path.join('.') || 'record'}: ${issue?.message}`);
  }
  const record = parsed.data;
  const counter = COUNTERS.find((candidate) => candidate.name === record.input.tokenizer);
  if (!counter) return failed(`unknown tokenizer ${record.input.tokenizer}`, record);
  let rebuilt: BuiltTurnContext;
  try {
    rebuilt = buildTurnContext(record.input, counter, record.snapshot.timestampMs);
  } catch (error) {
    return failed(`the rebuild failed: ${(error as Error).message}`, record);
  }
  const difference = firstDifference(record, rebuilt);
  return {
    line,
    turnId: record.snapshot.turnId,
    contextHash: record.snapshot.contextHash,
    proven: difference === null,
    difference,
  };
}

/** Rebuilds the session's turns (or the one named) from the local file alone. */
export function replaySession(options: ReplayOptions): SessionReplay {
  const { agentId, path } = sessionFile(options);
  const lines = readFileSync(path, 'utf8').split('\n');
  let turns = lines
    .map((text, index) => ({ text, line: index + 1 }))
    .filter(({ text }) => text.trim() !== '')
    .map(({ text, line }) => replayLine(text, line));
  if (options.turnId !== undefined) {
    // A line that could not be read may be the turn asked for: keep it, so it is not hidden.
    turns = turns.filter((turn) => turn.turnId === options.turnId || turn.turnId === null);
    if (!turns.some((turn) => turn.turnId === options.turnId)) {
      throw new CtxbusError(
        'not_found',
        `turn ${options.turnId} is not recorded for session ${options.sessionId} (${path})`,
      );
    }
  }
  return { agentId, sessionId: options.sessionId, path, turns };
}
