import { createHubLite } from '@ctxbus/client/light';
import { mintToken, startHub } from '@ctxbus/hub';
import type { AdapterTurn } from '@ctxbus/test-kit/adapter-conformance';
import { runAdapterConformance } from '@ctxbus/test-kit/adapter-conformance';
import type { InProcessHub } from '@ctxbus/test-kit/in-process-hub';
import { startInProcessHub } from '@ctxbus/test-kit/in-process-hub';
import { afterAll, beforeAll } from 'vitest';
import { parseCodexHookInput } from './hook-input.js';
import type { CodexHookOutput } from './hooks.js';
import { runCodexHookEvent } from './hooks.js';

// The shared adapter suite (test/kit) for Codex: each event runs through `runCodexHookEvent`,
// the code the hook process runs, against an in-process hub over HTTP.

let hub: InProcessHub;

beforeAll(async () => {
  hub = await startInProcessHub({ startHub, mintToken });
});
afterAll(() => hub.close());

const turnOf = (output: CodexHookOutput): AdapterTurn => ({
  injection: output.additionalContext ?? '',
  notices: output.systemMessage ? [output.systemMessage] : [],
});

let turns = 0;

runAdapterConformance({
  name: 'codex',
  hub: () => ({
    url: hub.url,
    token: async (runtime) => (await hub.mint(runtime)).token,
  }),
  driver: {
    runtime: 'codex',
    // Codex keeps 2,500 of its tokens of a hook's context (4 bytes each) and spills the rest.
    cap: 2_500,
    size: (injection) => Math.ceil(Buffer.byteLength(injection) / 4),
    open({ url, token, stateDir, sessionId, timeoutMs }) {
      const context = {
        client: createHubLite({ url, token, timeoutMs, runtime: 'codex' }),
        stateDir,
        now: () => new Date(),
      };
      const run = async (input: Record<string, unknown>) => {
        const event = parseCodexHookInput({ session_id: sessionId, cwd: stateDir, ...input });
        if (!event) throw new Error('bad hook input');
        return turnOf(await runCodexHookEvent(event, context));
      };
      return {
        start: () => run({ hook_event_name: 'SessionStart', source: 'startup' }),
        turn: (prompt) =>
          run({ hook_event_name: 'UserPromptSubmit', prompt, turn_id: `turn-${++turns}` }),
        end: (reply) =>
          run({ hook_event_name: 'Stop', last_assistant_message: reply, turn_id: `turn-${turns}` }),
      };
    },
  },
});
