import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { call, openStream, removeDir, tempDir } from '@ctxbus/test-kit';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { OPENCLAW_BIN } from './openclaw-harness.js';
import {
  because,
  callTool,
  openClawIt,
  PLUGIN_DIR,
  useOpenClawInstalled,
} from './openclaw-installed.js';
import type { ChatCompletionsRequest } from './scripted-openai-model.js';
import { contentText, requestText, roleText, toolResults } from './scripted-openai-model.js';

const OPEN_BLOCK = '<team-context source="ctxbus">';

// OpenClaw with ctxbus installed (see openclaw-installed.ts): the plugin loads, the team's
// context reaches the model, the model writes through the plugin's tool, uninstall is clean.
// The worker and hub-outage turns are in openclaw-offline.test.ts, run beside this file.

describe(`OpenClaw with ctxbus installed${because}`, () => {
  const world = useOpenClawInstalled();

  openClawIt(
    'loads the plugin with its hooks and tools; installing again changes nothing',
    async () => {
      const config = world.openclaw.readConfig() as {
        plugins: { load: { paths: string[] }; entries: Record<string, unknown> };
        mcp: { servers: Record<string, unknown> };
      };
      expect(config.plugins.load.paths).toContain(PLUGIN_DIR);
      expect(config.plugins.entries.ctxbus).toMatchObject({
        enabled: true,
        hooks: { allowConversationAccess: true },
        config: { url: world.hub.url, token: world.clawToken },
      });
      expect(config.mcp.servers.ctxbus).toMatchObject({
        url: `${world.hub.url}/mcp`,
        transport: 'streamable-http',
      });
      const { run, json } = await world.openclaw.inspectPlugin('ctxbus');
      expect(run.code, run.stderr).toBe(0);
      const inspected = json as {
        plugin: { status: string; toolNames: string[] };
        typedHooks: { name: string }[];
        diagnostics: { message: string }[];
      };
      expect(inspected.plugin.status).toBe('loaded');
      expect(inspected.plugin.toolNames).toEqual(
        expect.arrayContaining(['context_write', 'memory_query', 'capability_request']),
      );
      expect(inspected.typedHooks.map((hook) => hook.name).sort()).toEqual([
        'after_tool_call',
        'agent_end',
        'before_message_write',
        'before_prompt_build',
      ]);
      expect(inspected.diagnostics).toEqual([]);

      const again = await world.install();
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toContain('nothing changed');
    },
  );

  // One session for the next three tests (an OpenClaw turn costs 20-60 s): a turn whose context
  // holds what Claude Code wrote and whose reply states a decision, a turn where the model calls
  // context_write, and a turn that reads that turn back; before each, Claude Code writes
  // something new, and the last test checks that each turn's request starts with the one before.
  const sessionId = randomUUID();
  /** The first model request of each turn of the session. */
  const sent: ChatCompletionsRequest[] = [];
  /** Seed 002's turn context recorded for the session's turns (read by the second test). */
  const turnData = tempDir('ctxbus-e2e-openclaw-turns-');
  beforeAll(() => {
    world.openclaw.env.CTXBUS_TURN_SNAPSHOTS = '1';
    world.openclaw.env.CTXBUS_DATA = turnData;
  });
  afterAll(() => {
    delete world.openclaw.env.CTXBUS_TURN_SNAPSHOTS;
    delete world.openclaw.env.CTXBUS_DATA;
    removeDir(turnData);
  });
  /** Claude Code writes `title` (of `type`), then one turn of the session with `prompt`. */
  async function turnAfter(type: string, title: string, prompt: string, requests: number) {
    const written = await call(world.hub.url, 'POST', '/api/context', {
      token: world.codeToken,
      body: { type, title },
    });
    expect(written.status).toBe(201);
    const before = world.model.requests.length;
    const run = await world.openclaw.agent(prompt, { sessionId });
    expect(run.code, run.stderr).toBe(0);
    expect(world.model.requests.length).toBe(before + requests);
    const first = world.model.requests[before] as ChatCompletionsRequest;
    // What Claude Code wrote since the last turn reached this turn's request.
    expect(requestText(first)).toContain(title);
    sent.push(first);
    return { run, first, before };
  }

  openClawIt(
    'puts what Claude Code wrote into the request OpenClaw sends the model, and records the decision it states',
    async () => {
      world.reply = () => ({
        text: 'Noted.\nDecision: no deploys before the freeze ends (marker c41e)',
      });
      const { run, first } = await turnAfter(
        'decision',
        'Release frozen until Friday (marker c41e)',
        'What is the team up to?',
        1,
      );
      expect(run.json?.payloads).toEqual([expect.objectContaining({ text: expect.any(String) })]);
      expect(roleText(first, 'user')).toContain('Release frozen until Friday (marker c41e)');
      expect(roleText(first, 'user')).toContain('<team-context source="ctxbus">');
      expect(roleText(first, 'system')).toContain('capability_request');

      const decisions = await call(
        world.hub.url,
        'GET',
        '/api/context?type=decision&runtime=openclaw',
        {
          token: world.codeToken,
        },
      );
      const recorded = decisions.body.items.find(
        (item: { title: string }) =>
          item.title === 'no deploys before the freeze ends (marker c41e)',
      );
      expect(recorded?.source).toMatchObject({ runtime: 'openclaw', agentId: 'main' });
    },
  );

  openClawIt(
    'runs context_write for the model; a live subscriber standing in for Claude Code gets the item',
    async () => {
      const subscriber = openStream(world.hub.url, world.codeToken, { query: 'tags=ops' });
      await subscriber.ready;
      const title = 'Disk on build-2 is 95% full (marker 77b0)';
      const at = world.model.requests.length;
      world.reply = (_request, index) =>
        index === at
          ? callTool('context_write', {
              type: 'status',
              title,
              tags: ['ops'],
              urgency: 'attention',
            })
          : { text: 'Told the team.' };
      const { before } = await turnAfter(
        'status',
        'Build 2 is green (marker cache-b2e1)',
        'Tell the team the disk is nearly full',
        2,
      );
      const second = world.model.requests[before + 1];
      expect(second && toolResults(second).join('\n')).toContain(title);
      // Seed 002's turn context recorded for the next turn of the session: its chat window and
      // the tool result of this one.
      world.reply = () => ({ text: 'It is recorded.' });
      await turnAfter('status', 'Build 3 is green (marker cache-c3d2)', 'Is it recorded?', 1);
      const dir = join(turnData, 'agents', 'main', 'context');
      const records = readdirSync(dir).flatMap((file) =>
        readFileSync(join(dir, file), 'utf8')
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line)),
      );
      const turn = records.find((record) =>
        String(record.input.sources.currentInput.text).includes('Is it recorded?'),
      );
      if (!turn) throw new Error('no turn context recorded for the third prompt');
      // The chat window: the session's own prompt (inbound) and reply (outbound).
      const chat = turn.input.sources.recentMessages as { direction: string; text: string }[];
      expect(
        chat.some(
          (message) =>
            message.direction === 'inbound' &&
            message.text.includes('Tell the team the disk is nearly full'),
        ),
      ).toBe(true);
      expect(chat).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ direction: 'outbound', text: 'Told the team.' }),
        ]),
      );
      // Source 4: the tool result OpenClaw's after_tool_call reported.
      const snippets = turn.input.sources.toolSnippets as { output: string }[];
      expect(snippets.some((snippet) => snippet.output.includes(title))).toBe(true);
      await subscriber.waitFor(
        () => subscriber.items().some((event) => event.item.title === title),
        15_000,
      );
      const event = subscriber.items().find((entry) => entry.item.title === title);
      expect(event?.item.source).toMatchObject({ runtime: 'openclaw', agentId: 'main' });
      subscriber.close();
    },
  );

  openClawIt(
    'keeps each turn of a session a prefix of the next (prompt cache), with what another runtime wrote between turns',
    async () => {
      // The three turns above, each after a write of Claude Code's.
      expect(sent).toHaveLength(3);
      const blocks = sent.map((request) => {
        const texts = request.messages.map((message) => contentText(message.content));
        const last = texts.findLast((text) => text.includes(OPEN_BLOCK)) ?? '';
        return last.slice(last.indexOf(OPEN_BLOCK), last.indexOf('</team-context>') + 15);
      });
      // The first turn carries the team's bundle; later ones only the change, small (<= 10% of
      // the 2,000-token default budget, 3.5 characters a token), not the bundle again.
      expect(blocks[0]).toContain('SHARED CONTEXT');
      for (const block of blocks.slice(1)) {
        expect(block).not.toContain('SHARED CONTEXT');
        expect(block.length).toBeLessThanOrEqual(200 * 3.5);
      }
      for (const [index, later] of sent.entries()) {
        const earlier = sent[index - 1];
        if (!earlier) continue;
        // OpenClaw itself ends a request to an openai-completions model with its own runtime
        // context (exec sessions, subagents), which it does not keep in the history; everything
        // before it, the system prompt and each turn's team-context block included, is resent
        // byte for byte.
        const kept = earlier.messages.filter((message, at) => {
          const own =
            at === earlier.messages.length - 1 &&
            contentText(message.content).startsWith('<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>');
          return !own;
        });
        expect(kept.length).toBeGreaterThanOrEqual(earlier.messages.length - 1);
        expect(kept.some((message) => contentText(message.content).includes(OPEN_BLOCK))).toBe(
          true,
        );
        expect(JSON.stringify(later.messages.slice(0, kept.length))).toBe(JSON.stringify(kept));
      }
    },
  );

  openClawIt('uninstall removes exactly what install added', async () => {
    const removed = await world.ctxbus([
      'install',
      'openclaw',
      '--uninstall',
      '--openclaw',
      OPENCLAW_BIN,
    ]);
    expect(removed.code, removed.stderr).toBe(0);
    const config = world.openclaw.readConfig() as {
      plugins?: { load?: { paths?: string[] }; entries?: Record<string, unknown> };
      mcp?: { servers?: Record<string, unknown> };
      models?: unknown;
    };
    expect(config.plugins?.load?.paths ?? []).not.toContain(PLUGIN_DIR);
    expect(config.plugins?.entries?.ctxbus).toBeUndefined();
    expect(config.mcp?.servers?.ctxbus).toBeUndefined();
    expect(config.models).toBeDefined(); // the user's own settings stay
    expect(existsSync(join(PLUGIN_DIR, 'dist', 'index.js'))).toBe(true);
  });
});
