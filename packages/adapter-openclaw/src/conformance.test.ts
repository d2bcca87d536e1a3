import { countTokens } from '@ctxbus/core';
import type { AdapterTurn } from '@ctxbus/test-kit/adapter-conformance';
import { runAdapterConformance } from '@ctxbus/test-kit/adapter-conformance';
import { afterAll, beforeAll } from 'vitest';
import { registerCtxbus } from './register-plugin.js';
import type { TestHub } from './test-host.js';
import { recordingHost, reply, startTestHub } from './test-host.js';

// The shared adapter suite (test/kit) for OpenClaw: the plugin registered on a recording host,
// its before_prompt_build and agent_end run as the gateway would, against an in-process hub.

const TOKEN_BUDGET = 1_500;
/** The `<team-context>` tags around the injection. */
const WRAPPER_TOKENS = 20;

let hub: TestHub;
beforeAll(async () => {
  hub = await startTestHub();
});
afterAll(() => hub.close());

runAdapterConformance({
  name: 'openclaw',
  hub: () => ({ url: hub.url, token: (runtime) => hub.mint(runtime) }),
  driver: {
    runtime: 'openclaw',
    cap: TOKEN_BUDGET + WRAPPER_TOKENS,
    size: (injection) => countTokens(injection),
    open({ url, token, stateDir, sessionId, timeoutMs }) {
      const host = recordingHost({ url, token, stateDir, timeoutMs, tokenBudget: TOKEN_BUDGET });
      registerCtxbus(host.api, { env: {} });
      // One agent per session: the plugin keeps its state per agent.
      const context = { agentId: sessionId, sessionKey: `agent:${sessionId}:main` };
      let seen = host.logs.length;
      const notices = () => {
        const fresh = host.logs.slice(seen).filter((log) => log.level !== 'debug');
        seen = host.logs.length;
        return fresh.map((log) => log.message);
      };
      const turn = async (prompt?: string): Promise<AdapterTurn> => {
        const result = await host.promptBuild(context, prompt);
        return { injection: result?.prependContext ?? '', notices: notices() };
      };
      let runs = 0;
      return {
        start: () => turn(),
        turn: (prompt) => turn(prompt),
        async end(text) {
          await host.agentEnd(
            { runId: `${sessionId}-run-${++runs}`, success: true, messages: reply(text) },
            context,
          );
          return { injection: '', notices: notices() };
        },
      };
    },
  },
});
