import { homedir } from 'node:os';
import { join } from 'node:path';
import { createHubLite, readHookStdin } from '@ctxbus/client/light';
import { defaultDataDir } from '@ctxbus/client/turn-log';
import { parseCodexHookInput } from './hook-input.js';
import { runCodexHookEvent } from './hooks.js';
import { CODEX_RUNTIME, findHubTarget, hubTargetProblem } from './hub-target.js';
import { approvalWaitSeconds, parsePermissionInput, runPermissionRequest } from './permission.js';
import { permissionHub } from './permission-hub.js';

// The command Codex runs for each hook: `node ctxbus-codex-hook.js --url <hub>`, the event's
// JSON on stdin. It always exits 0 (a failing hook must not block Codex) and prints only what
// Codex reads: a JSON object with hookSpecificOutput.additionalContext and/or systemMessage, or
// for PermissionRequest (installed with --approvals) hookSpecificOutput.decision.

const HARD_LIMIT_MS = 8_000;
const TIMEOUT_MS = 2_500;
/** What a permission request's hook may run past its wait (the last read, the answer). */
const PERMISSION_SLACK_SECONDS = 10;

function stateDir(env: NodeJS.ProcessEnv): string {
  if (env.CTXBUS_STATE_DIR) return env.CTXBUS_STATE_DIR;
  return join(env.XDG_STATE_HOME || join(homedir(), '.local', 'state'), 'ctxbus', CODEX_RUNTIME);
}

const hardStop = setTimeout(() => process.exit(0), HARD_LIMIT_MS);
hardStop.unref();

/** Exits 0 after `ms`, whatever the hook is doing (Codex must never wait on a stuck hook). */
function guard(ms: number): void {
  setTimeout(() => process.exit(0), ms).unref();
}

/** PermissionRequest: asks the team's people, for as long as the install said. */
async function permissionRequest(raw: unknown): Promise<void> {
  const input = parsePermissionInput(raw);
  if (!input) return;
  const argv = process.argv.slice(2);
  const waitSeconds = approvalWaitSeconds(argv);
  clearTimeout(hardStop);
  guard((waitSeconds + PERMISSION_SLACK_SECONDS) * 1000);
  const target = findHubTarget(argv, process.env);
  const output = await runPermissionRequest(input, {
    hub: target ? permissionHub(target, TIMEOUT_MS) : null,
    waitSeconds,
  });
  const reply: Record<string, unknown> = {};
  if (output.decision) {
    reply.hookSpecificOutput = { hookEventName: 'PermissionRequest', decision: output.decision };
  }
  if (output.systemMessage) reply.systemMessage = output.systemMessage;
  if (Object.keys(reply).length > 0) process.stdout.write(JSON.stringify(reply));
}

async function main(): Promise<void> {
  const raw: unknown = JSON.parse((await readHookStdin()) || '{}');
  if ((raw as { hook_event_name?: unknown } | null)?.hook_event_name === 'PermissionRequest') {
    return permissionRequest(raw);
  }
  const input = parseCodexHookInput(raw);
  if (!input) return;
  const argv = process.argv.slice(2);
  const target = findHubTarget(argv, process.env);
  const output = await runCodexHookEvent(input, {
    client: target
      ? createHubLite({ ...target, timeoutMs: TIMEOUT_MS, runtime: CODEX_RUNTIME })
      : null,
    ...(!target && { hubless: hubTargetProblem(argv, process.env) }),
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

main()
  .catch(() => {})
  .finally(() => {
    process.exitCode = 0;
  });
