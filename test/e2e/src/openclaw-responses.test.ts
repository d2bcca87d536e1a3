import { randomUUID } from 'node:crypto';
import { call, useHubProcess } from '@ctxbus/test-kit';
import { requestStartsWith } from '@ctxbus/test-kit/request-prefix';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import type { OpenClawGateway } from './openclaw-gateway.js';
import { configureGateway, startGateway } from './openclaw-gateway.js';
import type { OpenClawHome, OpenClawRun } from './openclaw-harness.js';
import { createOpenClawHome, OPENCLAW_BIN, OPENCLAW_NO_MEMORY_SEARCH } from './openclaw-harness.js';
import { because, openClawIt, runCtxbus } from './openclaw-installed.js';
import type { ResponsesRequest, ScriptedResponsesModel } from './scripted-responses-model.js';
import { requestText, startScriptedResponsesModel, toolNames } from './scripted-responses-model.js';

const OPEN_BLOCK = '<team-context source="ctxbus">';
const OPENCLAW_OWN = '<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>';

// OpenClaw with ctxbus on its bundled `openai` provider, the Responses API (what a user of
// OpenAI gets; its base URL the scripted model): that provider's transcript policy keeps the
// runtime context OpenClaw ends each request with (`appendOnlyRuntimeContext`), so each turn's
// request starts with the previous one's, byte for byte, that message included. On a provider
// of the config's own (openclaw.test.ts, Chat Completions) OpenClaw drops it from the next
// request, which no plugin can change (packages/adapter-openclaw/README.md, Prompt cache).
//
// One OpenClaw home with ctxbus installed (an install costs two OpenClaw starts) for both ways a
// turn runs, each a session of three turns with an item of Claude Code's written before each:
// 1. `agent --local` turns, where before_message_write writes each block into the history;
// 2. turns through the real gateway (`openclaw agent` without --local: the path of every channel
//    user). OpenClaw 2026.9.6 writes a gateway turn's user message to the history when it
//    admits the turn, before before_prompt_build, so the history keeps the bare prompt; the
//    ctxbus context engine that `ctxbus install openclaw` selects shows each earlier prompt with
//    the block it was sent with. The gateway's start is the cost (a turn there is ~5-15 s).
// In both, the second turn is the first whose history holds a block, and the third checks the
// prefix again after a turn of changes only.

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

  /** `ctxbus install openclaw` into the home, once (the first story to run does it). */
  let installed: Promise<void> | undefined;
  function install(): Promise<void> {
    installed ??= (async () => {
      const run = await runCtxbus(openclaw, [
        'install',
        'openclaw',
        '--url',
        hub.url,
        '--token',
        hub.tokens.claw,
        '--openclaw',
        OPENCLAW_BIN,
      ]);
      expect(run.code, run.stdout + run.stderr).toBe(0);
      const config = openclaw.readConfig() as {
        plugins: {
          slots?: object;
          entries: { ctxbus: { config: Record<string, unknown> } };
        };
      };
      expect(config.plugins.slots).toMatchObject({ contextEngine: 'ctxbus' });
      // The plugin waits for the hub 1.5 s by default, then goes on without it (a turn never
      // waits on a slow hub). The subject here is the prefix, not a slow hub: the config's
      // longest wait.
      config.plugins.entries.ctxbus.config.timeoutMs = 10_000;
      openclaw.writeConfig(config);
    })();
    return installed;
  }

  /**
   * Three turns, each after Claude Code writes an item: each turn's request (the last one that
   * offers the agent's tools and carries the prompt; OpenClaw's side requests, such as the
   * gateway's session recap, quote the prompt and offer none) holds that item.
   */
  async function threeTurns(
    label: string,
    turn: (prompt: string) => Promise<OpenClawRun>,
    diagnose: () => string,
  ): Promise<ResponsesRequest[]> {
    const sent: ResponsesRequest[] = [];
    for (const index of [1, 2, 3]) {
      const marker = `${label}-${index}-${randomUUID().slice(0, 8)}`;
      const written = await call(hub.url, 'POST', '/api/context', {
        token: hub.tokens.code,
        body: { type: 'status', title: `Build ${index} passed (${marker})` },
      });
      expect(written.status).toBe(201);
      const prompt = `Question ${index} (${label}): what changed?`;
      const from = model.requests.length;
      const run = await turn(prompt);
      expect(run.code, run.stderr + run.stdout).toBe(0);
      const request = model.requests
        .slice(from)
        .findLast((r) => toolNames(r).length > 0 && requestText(r).includes(prompt));
      expect(request, `a request of turn ${index} carried its prompt`).toBeDefined();
      const text = requestText(request as ResponsesRequest);
      if (!text.includes(marker)) {
        const block = text.slice(text.lastIndexOf(OPEN_BLOCK), text.lastIndexOf('</team-context>'));
        throw new Error(
          `the item written before turn ${index} is not in its request; its last block:\n${block}\n${diagnose()}`,
        );
      }
      sent.push(request as ResponsesRequest);
    }
    return sent;
  }

  /** Each request starts with the one before it, as the Responses API's prompt cache reads it. */
  function expectEachAPrefixOfTheNext(sent: readonly ResponsesRequest[]): void {
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
    'keeps each `agent --local` turn of a session a prefix of the next, with what another runtime wrote between turns',
    async () => {
      await install();
      const sessionId = randomUUID();
      const sent = await threeTurns(
        'local',
        (prompt) => openclaw.agent(prompt, { sessionId }),
        () => '',
      );
      const first = requestText(sent[0] as ResponsesRequest);
      expect(first.includes(OPEN_BLOCK), 'the first request has the team-context block').toBe(true);
      // OpenClaw's own runtime context is there, and kept in the next requests (the prefix below).
      expect(first.includes(OPENCLAW_OWN), "OpenClaw's runtime context is sent").toBe(true);
      expectEachAPrefixOfTheNext(sent);
    },
  );

  openClawIt(
    'keeps each gateway turn of a session a prefix of the next, with what another runtime wrote between turns',
    async () => {
      await install();
      const port = await configureGateway(openclaw, 'e2e-gateway-token-prefix');
      gateway = await startGateway(openclaw, port);
      const running = gateway;
      const sessionKey = `agent:main:prefix-${randomUUID().slice(0, 8)}`;
      const sent = await threeTurns(
        'gateway',
        (prompt) =>
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
        // What the plugin said (the gateway runs --verbose).
        () => {
          // The plugin's own lines (a hub it could not read, say) come before the tail's.
          const plugin = running
            .output()
            .split('\n')
            .filter((line) => /ctxbus/i.test(line))
            .slice(-40);
          return `--- the gateway's ctxbus lines ---\n${plugin.join('\n')}\n--- gateway output (tail) ---\n${running.output().slice(-6_000)}`;
        },
      );
      // The first turn's block holds the team's bundle; a later turn's history holds it, so the
      // later turns get what changed only (one bundle in the third request, not three).
      const third = requestText(sent[2] as ResponsesRequest);
      expect(third.split(OPEN_BLOCK).length - 1, 'three blocks in the third request').toBe(3);
      expect(third.split('SHARED CONTEXT (CTXBUS)').length - 1, 'one bundle').toBe(1);
      expectEachAPrefixOfTheNext(sent);
    },
  );
});
