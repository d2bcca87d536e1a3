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
import { requestText, startScriptedResponsesModel, toolNames } from './scripted-responses-model.js';

const OPEN_BLOCK = '<team-context source="ctxbus">';

// Turns through the real gateway (`openclaw agent` without --local: the path of every channel
// user), on OpenAI's Responses API as in openclaw-responses.test.ts. OpenClaw 2026.9.6 writes a
// gateway turn's user message to the history when it admits the turn, before before_prompt_build,
// so the history keeps the bare prompt; the ctxbus context engine that `ctxbus install openclaw`
// selects shows each earlier prompt with the block it was sent with, so each turn's request
// starts with the last one's. Three turns on one gateway (each ~5-15 s; the gateway's start is
// the cost): the second is the first whose history holds a block, the third checks it again
// after a turn of changes only.

describe(`OpenClaw with ctxbus: turns through the gateway${because}`, () => {
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
      extraConfig: OPENCLAW_NO_MEMORY_SEARCH,
    });
  });

  afterAll(async () => {
    await gateway?.stop();
    await model?.close();
    openclaw?.remove();
  });

  openClawIt(
    'keeps each gateway turn of a session a prefix of the next, with what another runtime wrote between turns',
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
      // The plugin waits for the hub 1.5 s by default, then goes on without it (a turn never
      // waits on a slow hub). The subject here is the prefix, not a slow hub: the config's
      // longest wait.
      const config = openclaw.readConfig() as {
        plugins: { entries: { ctxbus: { config: Record<string, unknown> } } };
      };
      config.plugins.entries.ctxbus.config.timeoutMs = 10_000;
      openclaw.writeConfig(config);
      const port = await configureGateway(openclaw, 'e2e-gateway-token-prefix');
      gateway = await startGateway(openclaw, port);

      const sessionKey = `agent:main:prefix-${randomUUID().slice(0, 8)}`;
      const sent: ResponsesRequest[] = [];
      for (const turn of [1, 2, 3]) {
        const marker = `gateway-${turn}-${randomUUID().slice(0, 8)}`;
        const written = await call(hub.url, 'POST', '/api/context', {
          token: hub.tokens.code,
          body: { type: 'status', title: `Build ${turn} passed (${marker})` },
        });
        expect(written.status).toBe(201);
        const prompt = `Question ${turn}: what changed?`;
        const from = model.requests.length;
        const run = await openclaw.run([
          'agent',
          '--agent',
          'main',
          '--session-key',
          sessionKey,
          '-m',
          prompt,
          '--json',
        ]);
        expect(run.code, run.stderr + run.stdout).toBe(0);
        // The turn's request offers the agent's tools; OpenClaw's side requests (its session
        // recap, sent beside the turn, quotes the prompt) offer none.
        const request = model.requests
          .slice(from)
          .findLast((r) => toolNames(r).length > 0 && requestText(r).includes(prompt));
        expect(request, `a request of turn ${turn} carried its prompt`).toBeDefined();
        const text = requestText(request as ResponsesRequest);
        if (!text.includes(marker)) {
          // What the plugin said (the gateway runs --verbose) and what the turn was sent.
          const block = text.slice(
            text.lastIndexOf(OPEN_BLOCK),
            text.lastIndexOf('</team-context>'),
          );
          throw new Error(
            `the item written before turn ${turn} is not in its request; its last block:\n${block}\n--- gateway output (tail) ---\n${gateway.output().slice(-6_000)}`,
          );
        }
        sent.push(request as ResponsesRequest);
      }

      // The first turn's block holds the team's bundle; a later turn's history holds it, so the
      // later turns get what changed only (one bundle in the third request, not three).
      const third = requestText(sent[2] as ResponsesRequest);
      expect(third.split(OPEN_BLOCK).length - 1, 'three blocks in the third request').toBe(3);
      expect(third.split('SHARED CONTEXT (CTXBUS)').length - 1, 'one bundle').toBe(1);
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
