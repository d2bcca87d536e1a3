import { randomUUID } from 'node:crypto';
import { call, useHubProcess } from '@ctxbus/test-kit';
import { requestStartsWith } from '@ctxbus/test-kit/request-prefix';
import { afterAll, beforeAll, describe, expect } from 'vitest';
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
// The turns are `agent --local` ones, where before_message_write writes each block into the
// history; gateway turns, whose history keeps the bare prompt, are openclaw-gateway-prefix.test.ts.

describe(`OpenClaw with ctxbus on OpenAI's Responses API${because}`, () => {
  const hub = useHubProcess({
    tokens: { claw: ['acme', 'openclaw'], code: ['acme', 'claude-code'] },
  });
  let model: ScriptedResponsesModel;
  let openclaw: OpenClawHome;

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
    await model?.close();
    openclaw?.remove();
  });

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

      const sessionId = randomUUID();
      const sent: ResponsesRequest[] = [];
      for (const turn of [1, 2, 3]) {
        const marker = `responses-${turn}-${randomUUID().slice(0, 8)}`;
        const written = await call(hub.url, 'POST', '/api/context', {
          token: hub.tokens.code,
          body: { type: 'status', title: `Build ${turn} passed (${marker})` },
        });
        expect(written.status).toBe(201);
        const prompt = `Question ${turn}: what changed?`;
        const from = model.requests.length;
        const run = await openclaw.agent(prompt, { sessionId });
        expect(run.code, run.stderr).toBe(0);
        const request = model.requests.slice(from).findLast((r) => requestText(r).includes(prompt));
        expect(request, `a request of turn ${turn} carried its prompt`).toBeDefined();
        // What Claude Code wrote before the turn reached it, in ctxbus's block.
        const reached = requestText(request as ResponsesRequest).includes(marker);
        expect(reached, `the item written before turn ${turn} is in its request`).toBe(true);
        sent.push(request as ResponsesRequest);
      }

      const first = requestText(sent[0] as ResponsesRequest);
      expect(first.includes(OPEN_BLOCK), 'the first request has the team-context block').toBe(true);
      // OpenClaw's own runtime context is there, and kept in the next requests (the prefix below).
      expect(first.includes(OPENCLAW_OWN), "OpenClaw's runtime context is sent").toBe(true);
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
    },
  );
});
