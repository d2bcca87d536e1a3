import { randomUUID } from 'node:crypto';
import { call, useHubProcess } from '@ctxbus/test-kit';
import { requestStartsWith } from '@ctxbus/test-kit/request-prefix';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import type { OpenClawGateway } from './openclaw-gateway.js';
import { configureGateway, startGateway } from './openclaw-gateway.js';
import type { OpenClawHome } from './openclaw-harness.js';
import { createOpenClawHome, OPENCLAW_BIN, OPENCLAW_NO_MEMORY_SEARCH } from './openclaw-harness.js';
import { because, openClawIt, runCtxbus } from './openclaw-installed.js';
import type { ResponsesRequest, ScriptedResponsesModel } from './scripted-responses-model.js';
import { requestText, startScriptedResponsesModel } from './scripted-responses-model.js';

const OPEN_BLOCK = '<team-context source="ctxbus">';
const OPENCLAW_OWN = '<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>';

// OpenClaw with ctxbus on its bundled `openai` provider, the Responses API (what a user of
// OpenAI gets; its base URL the scripted model): that provider's transcript policy keeps the
// runtime context OpenClaw ends each request with (`appendOnlyRuntimeContext`), so each turn's
// request starts with the previous one's, byte for byte, that message included. On a provider
// of the config's own (openclaw.test.ts, Chat Completions) OpenClaw drops it from the next
// request, which no plugin can change (packages/adapter-openclaw/README.md, Prompt cache).
// Two stories on one OpenClaw home with ctxbus installed, three turns each:
// 1. `agent --local` turns, where before_message_write writes each block into the history.
// 2. Turns through the real gateway (`openclaw agent` without --local: the path of every channel
//    user). OpenClaw 2026.9.6 writes a gateway turn's user message to the history when it
//    admits the turn, before before_prompt_build, so the history keeps the bare prompt; the
//    ctxbus context engine that `ctxbus install openclaw` selects shows each earlier prompt with
//    the block it was sent with. The second turn is the first whose history holds a block, the
//    third checks it again after a turn of changes only.

describe(`OpenClaw with ctxbus on OpenAI's Responses API${because}`, () => {
  const hub = useHubProcess({
    tokens: { claw: ['acme', 'openclaw'], code: ['acme', 'claude-code'] },
  });
  let model: ScriptedResponsesModel;
  let openclaw: OpenClawHome;
  let gateway: OpenClawGateway | undefined;

  beforeAll(async () => {
    model = await startScriptedResponsesModel(() => ({ text: 'Understood.' }));
    openclaw = createOpenClawHome({
      modelBaseUrl: model.baseUrl,
      model: { provider: 'openai', api: 'openai-responses' },
      // The subject is the Responses API's prefix, not OpenClaw's default tools.
      extraConfig: OPENCLAW_NO_MEMORY_SEARCH,
    });
  });

  afterAll(async () => {
    await gateway?.stop();
    await model?.close();
    openclaw?.remove();
  });

  /**
   * Three turns of one session, `run` running each: before each, Claude Code writes an item,
   * which reaches that turn's request. The requests, in order.
   */
  async function threeTurns(
    label: string,
    run: (prompt: string) => Promise<{ code: number | null; stdout: string; stderr: string }>,
  ): Promise<ResponsesRequest[]> {
    const sent: ResponsesRequest[] = [];
    for (const turn of [1, 2, 3]) {
      const marker = `${label}-${turn}-${randomUUID().slice(0, 8)}`;
      const written = await call(hub.url, 'POST', '/api/context', {
        token: hub.tokens.code,
        body: { type: 'status', title: `Build ${turn} passed (${marker})` },
      });
      expect(written.status).toBe(201);
      const prompt = `Question ${turn}: what changed?`;
      const from = model.requests.length;
      const done = await run(prompt);
      expect(done.code, done.stderr + done.stdout).toBe(0);
      const request = model.requests.slice(from).findLast((r) => requestText(r).includes(prompt));
      expect(request, `a request of turn ${turn} carried its prompt`).toBeDefined();
      // What Claude Code wrote before the turn reached it, in ctxbus's block.
      const reached = requestText(request as ResponsesRequest).includes(marker);
      expect(reached, `the item written before turn ${turn} is in its request`).toBe(true);
      sent.push(request as ResponsesRequest);
    }
    return sent;
  }

  /** Each request starts with the one before, byte for byte (the provider's prompt cache). */
  function expectPrefixes(sent: readonly ResponsesRequest[]): void {
    for (const [index, later] of sent.entries()) {
      const earlier = sent[index - 1];
      if (!earlier) continue;
      const verdict = requestStartsWith(
        'responses',
        earlier as unknown as Record<string, unknown>,
        later as unknown as Record<string, unknown>,
      );
      expect(verdict, `turn ${index + 1} starts with turn ${index}`).toEqual({ starts: true });
    }
  }

  openClawIt(
    'keeps each turn of a session a prefix of the next, with what another runtime wrote between turns',
    async () => {
      const installed = await runCtxbus(openclaw, [
        'install',
        'openclaw',
        '--url',
        hub.url,
        '--token',
        hub.tokens.claw,
        '--openclaw',
        OPENCLAW_BIN,
      ]);
      expect(installed.code, installed.stdout + installed.stderr).toBe(0);
      const slots = (openclaw.readConfig() as { plugins?: { slots?: object } }).plugins?.slots;
      expect(slots).toMatchObject({ contextEngine: 'ctxbus' });

      const sessionId = randomUUID();
      const sent = await threeTurns('responses', (prompt) => openclaw.agent(prompt, { sessionId }));
      const first = requestText(sent[0] as ResponsesRequest);
      expect(first.includes(OPEN_BLOCK), 'the first request has the team-context block').toBe(true);
      // OpenClaw's own runtime context is there, and kept in the next requests (the prefix below).
      expect(first.includes(OPENCLAW_OWN), "OpenClaw's runtime context is sent").toBe(true);
      expectPrefixes(sent);
    },
  );

  openClawIt(
    'keeps each gateway turn of a session a prefix of the next, with what another runtime wrote between turns',
    async () => {
      const port = await configureGateway(openclaw, 'e2e-gateway-token-prefix');
      gateway = await startGateway(openclaw, port);
      const sessionKey = `agent:main:prefix-${randomUUID().slice(0, 8)}`;
      const sent = await threeTurns('gateway', (prompt) =>
        openclaw.run([
          'agent',
          '--agent',
          'main',
          '--session-key',
          sessionKey,
          '-m',
          prompt,
          '--json',
        ]),
      );
      // The first turn's block holds the team's bundle; a later turn's history holds it, so the
      // later turns get what changed only (one bundle in the third request, not three).
      const third = requestText(sent[2] as ResponsesRequest);
      expect(third.split(OPEN_BLOCK).length - 1, 'three blocks in the third request').toBe(3);
      expect(third.split('SHARED CONTEXT (CTXBUS)').length - 1, 'one bundle').toBe(1);
      expectPrefixes(sent);
    },
  );
});
