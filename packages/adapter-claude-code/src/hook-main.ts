import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { createHubLite, readHookStdin } from '@ctxbus/client/light';
import { defaultDataDir } from '@ctxbus/client/turn-log';
import type { HookInput } from './hook-input.js';
import { parseHookInput } from './hook-input.js';
import { INSTALLED_TOOL_PREFIX, PLUGIN_TOOL_PREFIX, runHookEvent } from './hooks.js';
import { CLAUDE_CODE_RUNTIME, findHubTarget } from './hub-target.js';
import { startLivePush, stopLivePush } from './live-start.js';
import { readSessionState } from './session-state.js';

// The command Claude Code runs for each hook: `node hook.js`, the event's JSON on stdin.
// It always exits 0 (a hook that fails must not block Claude Code) and prints only what
// Claude Code should read: a JSON object with additionalContext and/or systemMessage.

const HARD_LIMIT_MS = 8_000;

function stateDir(env: NodeJS.ProcessEnv): string {
  if (env.CTXBUS_STATE_DIR) return env.CTXBUS_STATE_DIR;
  return join(env.XDG_STATE_HOME || join(homedir(), '.local', 'state'), 'ctxbus', 'claude-code');
}

/**
 * Live push (`ctxbus install claude-code --live`): a session start spawns the session's live
 * process (detached, when Claude Code gave the hook an inbox socket), a session end ends it.
 */
function livePush(input: HookInput, dir: string): void {
  if (input.hook_event_name === 'SessionEnd') stopLivePush(dir, input.session_id);
  if (input.hook_event_name !== 'SessionStart') return;
  startLivePush({
    env: process.env,
    stateDir: dir,
    sessionId: input.session_id,
    since: readSessionState(dir, input.session_id).lastSeenSeq,
    // Beside the entry Claude Code ran (this CommonJS bundle has no import.meta).
    script: join(dirname(process.argv[1] ?? '.'), 'ctxbus-claude-live.js'),
  });
}

async function main(): Promise<void> {
  const input = parseHookInput(JSON.parse((await readHookStdin()) || '{}'));
  if (!input) return;
  const target = findHubTarget(process.env);
  // SessionEnd gets 1.5 s from Claude Code; the others may take a little longer.
  const timeoutMs = input.hook_event_name === 'SessionEnd' ? 1_000 : 2_500;
  const client = target
    ? createHubLite({ ...target, timeoutMs, runtime: CLAUDE_CODE_RUNTIME })
    : null;
  const dir = stateDir(process.env);
  const output = await runHookEvent(input, {
    client,
    stateDir: dir,
    // The plugin's hooks.json runs `hook.js --plugin`: its MCP tools carry the plugin's names.
    toolPrefix: process.argv.includes('--plugin') ? PLUGIN_TOOL_PREFIX : INSTALLED_TOOL_PREFIX,
    now: () => new Date(),
    // Seed 002: snapshots of each prompt's turn context when CTXBUS_TURN_SNAPSHOTS is on; a
    // failed build is audited under the data directory either way.
    turnLog: {
      dataDir: defaultDataDir(process.env),
      snapshots: /^(1|true|yes|on)$/i.test(process.env.CTXBUS_TURN_SNAPSHOTS ?? ''),
    },
  });
  livePush(input, dir);
  const reply: Record<string, unknown> = {};
  if (output.additionalContext) {
    reply.hookSpecificOutput = {
      hookEventName: input.hook_event_name,
      additionalContext: output.additionalContext,
    };
  }
  if (output.systemMessage) reply.systemMessage = output.systemMessage;
  if (Object.keys(reply).length > 0) process.stdout.write(JSON.stringify(reply));
}

const guard = setTimeout(() => process.exit(0), HARD_LIMIT_MS);
guard.unref();
main()
  .catch(() => {})
  .finally(() => {
    process.exitCode = 0;
  });
