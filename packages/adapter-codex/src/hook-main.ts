import { homedir } from 'node:os';
import { join } from 'node:path';
import { createHubLite } from '@ctxbus/client/light';
import { defaultDataDir } from '@ctxbus/client/turn-log';
import { parseCodexHookInput } from './hook-input.js';
import { runCodexHookEvent } from './hooks.js';
import { CODEX_RUNTIME, findHubTarget } from './hub-target.js';

// The command Codex runs for each hook: `node ctxbus-codex-hook.js --url <hub>`, the event's
// JSON on stdin. It always exits 0 (a failing hook must not block Codex) and prints only what
// Codex reads: a JSON object with hookSpecificOutput.additionalContext and/or systemMessage.

const HARD_LIMIT_MS = 8_000;
const TIMEOUT_MS = 2_500;

function stateDir(env: NodeJS.ProcessEnv): string {
  if (env.CTXBUS_STATE_DIR) return env.CTXBUS_STATE_DIR;
  return join(env.XDG_STATE_HOME || join(homedir(), '.local', 'state'), 'ctxbus', CODEX_RUNTIME);
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function main(): Promise<void> {
  const input = parseCodexHookInput(JSON.parse((await readStdin()) || '{}'));
  if (!input) return;
  const target = findHubTarget(process.argv.slice(2), process.env);
  const output = await runCodexHookEvent(input, {
    client: target
      ? createHubLite({ ...target, timeoutMs: TIMEOUT_MS, runtime: CODEX_RUNTIME })
      : null,
    stateDir: stateDir(process.env),
    now: () => new Date(),
    turnLog: {
      dataDir: defaultDataDir(process.env),
      snapshots: /^(1|true|yes|on)$/i.test(process.env.CTXBUS_TURN_SNAPSHOTS ?? ''),
    },
  });
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
