import { createHubLite } from '@ctxbus/client/light';
import { mintToken, startHub } from '@ctxbus/hub';
import type { AdapterTurn } from '@ctxbus/test-kit/adapter-conformance';
import { runAdapterConformance } from '@ctxbus/test-kit/adapter-conformance';
import type { InProcessHub } from '@ctxbus/test-kit/in-process-hub';
import { startInProcessHub } from '@ctxbus/test-kit/in-process-hub';
import { afterAll, beforeAll } from 'vitest';
import type { HookInput } from './hook-input.js';
import { parseHookInput } from './hook-input.js';
import type { HookOutput } from './hooks.js';
import { runHookEvent } from './hooks.js';

// The shared adapter suite (test/kit) for Claude Code: each event runs through `runHookEvent`,
// the code the hook process runs, against an in-process hub over HTTP.

let hub: InProcessHub;

beforeAll(async () => {
  hub = await startInProcessHub({ startHub, mintToken });
});
afterAll(() => hub.close());

const turnOf = (output: HookOutput): AdapterTurn => ({
  injection: output.additionalContext ?? '',
  notices: output.systemMessage ? [output.systemMessage] : [],
});

runAdapterConformance({
  name: 'claude-code',
  hub: () => ({
    url: hub.url,
    token: async (runtime) => (await hub.mint(runtime)).token,
  }),
  driver: {
    runtime: 'claude-code',
    // Claude Code drops hook output over 10,000 characters.
    cap: 10_000,
    size: (injection) => injection.length,
    open({ url, token, stateDir, sessionId, timeoutMs }) {
      const context = {
        client: createHubLite({ url, token, timeoutMs, runtime: 'claude-code' }),
        stateDir,
        now: () => new Date(),
      };
      const run = async (input: Record<string, unknown>) => {
        const event = parseHookInput({ session_id: sessionId, cwd: stateDir, ...input });
        if (!event) throw new Error('bad hook input');
        return turnOf(await runHookEvent(event as HookInput, context));
      };
      return {
        start: () => run({ hook_event_name: 'SessionStart', source: 'startup' }),
        turn: (prompt) => run({ hook_event_name: 'UserPromptSubmit', prompt }),
        end: (reply) => run({ hook_event_name: 'Stop', last_assistant_message: reply }),
      };
    },
  },
});
