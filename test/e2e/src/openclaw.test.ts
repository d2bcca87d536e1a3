import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { call, openStream, removeDir, tempDir, waitUntil } from '@ctxbus/test-kit';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { OPENCLAW_BIN, parseJsonOutput } from './openclaw-harness.js';
import {
  because,
  callTool,
  openClawIt,
  PLUGIN_DIR,
  useOpenClawInstalled,
} from './openclaw-installed.js';
import type { ChatCompletionsRequest } from './scripted-openai-model.js';
import {
  contentText,
  requestText,
  roleText,
  toolNames,
  toolResults,
} from './scripted-openai-model.js';

const OPEN_BLOCK = '<team-context source="ctxbus">';

// OpenClaw with ctxbus installed (see openclaw-installed.ts): the plugin loads, the team's
// context reaches the model, the model writes through the plugin's tool, uninstall is clean.
// The worker and hub-outage turns and the gateway's live push are in
// openclaw-offline-live.test.ts, run beside this file.
//
// Beside ctxbus, the same OpenClaw has a probe plugin (fixtures/openclaw-probe-plugin) installed
// the way a user installs a local one (copied into the state dir): it proves the plugin surface
// the adapter relies on (every before_prompt_build field, a tool through Tool Search's bridge,
// agent_end's view of the turn) on the turns below, without an OpenClaw home and turns of its
// own (an OpenClaw turn costs 20-60 s). With tools.toolSearch false, a plugin tool is a direct
// tool: openclaw-offline-live.test.ts's worker turn.

const PROBE = resolve(import.meta.dirname, '../fixtures/openclaw-probe-plugin');
const PROBE_ID = 'ctxbus-probe';
const MARKER = 'probe-marker-5d1e';

/** A request's JSON less the probe's per-turn text around the prompt (and its blank line). */
function withoutProbeTurnText(json: string): string {
  const text = (raw: string) => JSON.stringify(raw).slice(1, -1);
  return json
    .replaceAll(text(`[${MARKER}:prependContext]\n\n`), '')
    .replaceAll(text(`\n\n[${MARKER}:appendContext]`), '');
}

/** What the probe's agent_end saw of the last turn, from its transcript file. */
function probeTranscript(file: string): {
  success: boolean;
  messages: { role: string; content: unknown }[];
} {
  return JSON.parse(readFileSync(file, 'utf8'));
}

describe(`OpenClaw with ctxbus installed${because}`, () => {
  const world = useOpenClawInstalled();
  let transcriptFile = '';

  beforeAll(async () => {
    if (!world.openclaw) return; // skipped: the world was not set up
    transcriptFile = join(world.openclaw.home, 'agent-end.json');
    // A local directory is copied into $OPENCLAW_STATE_DIR/extensions/<id>; --force confirms a
    // source outside ClawHub, --accept-capabilities the tools the manifest declares.
    const installed = await world.openclaw.run([
      'plugins',
      'install',
      '--force',
      '--accept-capabilities',
      PROBE,
    ]);
    expect(installed.code, installed.stdout + installed.stderr).toBe(0);
    // Install writes `plugins.entries.<id>: { enabled: true }` only; conversation hooks stay
    // blocked until allowConversationAccess, and `config` becomes the plugin's api.pluginConfig.
    const config = world.openclaw.readConfig() as { plugins: { entries: Record<string, object> } };
    config.plugins.entries[PROBE_ID] = {
      ...config.plugins.entries[PROBE_ID],
      hooks: { allowConversationAccess: true },
      config: { transcriptFile, marker: MARKER },
    };
    world.openclaw.writeConfig(config);
  }, 300_000);

  openClawIt(
    'loads the plugin with its hooks and tools, beside a local plugin installed into the state dir; installing again changes nothing',
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
      // Both plugins in one OpenClaw start (`inspect --all`: every plugin, the bundled ones too).
      const run = await world.openclaw.run(['plugins', 'inspect', '--all', '--runtime', '--json']);
      expect(run.code, run.stderr).toBe(0);
      type Inspected = {
        plugin: { id: string; status: string; toolNames: string[]; enabled: boolean };
        typedHooks: { name: string }[];
        diagnostics: { message: string }[];
        install?: { source: string; installPath: string };
      };
      const all = parseJsonOutput(run.stdout) as unknown as Inspected[];
      const byId = (id: string) => all.find((entry) => entry.plugin.id === id) as Inspected;
      const inspected = byId('ctxbus');
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

      // The probe, copied into the state dir, loaded with its tool and both conversation hooks.
      const probeDir = join(world.openclaw.stateDir, 'extensions', PROBE_ID);
      expect(existsSync(join(probeDir, 'index.js'))).toBe(true);
      const probe = byId(PROBE_ID);
      expect(probe.plugin).toMatchObject({ status: 'loaded', enabled: true });
      expect(probe.plugin.toolNames).toEqual(['probe_echo']);
      expect(probe.typedHooks.map((hook) => hook.name).sort()).toEqual([
        'agent_end',
        'before_prompt_build',
      ]);
      expect(probe.diagnostics).toEqual([]);
      expect(probe.install).toMatchObject({ source: 'path', installPath: probeDir });

      const again = await world.install();
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toContain('nothing changed');
    },
  );

  // One session for the next three tests (an OpenClaw turn costs 20-60 s): a turn whose context
  // holds what Claude Code wrote and whose reply states a decision, a turn where the model calls
  // context_write, and a turn that reads that turn back; before each, Claude Code writes
  // something new, and the last test checks that each turn's request starts with the one before.
  // `agent --local` turns, not a gateway's (4 s a turn there): through the gateway OpenClaw
  // 2026.9.6 writes the bare prompt to the history, so no turn starts with the last
  // (OPENCLAW-NOTES.md).
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
      // Every field the probe's before_prompt_build returns reaches the model: the System ones
      // in the system message, the others around the user's prompt.
      const system = roleText(first, 'system');
      expect(system).toContain(`[${MARKER}:prependSystemContext]`);
      expect(system).toContain(`[${MARKER}:appendSystemContext]`);
      expect(roleText(first, 'user')).toMatch(
        new RegExp(
          `\\[${MARKER}:prependContext\\][\\s\\S]*What is the team up to\\?[\\s\\S]*\\[${MARKER}:appendContext\\]`,
        ),
      );
      // Tool Search is on by default: plugin tools are not in `tools` but listed in the system
      // prompt, and the model calls them through the `tool_call` bridge.
      expect(toolNames(first)).toContain('tool_call');
      expect(toolNames(first)).not.toContain('probe_echo');
      expect(system).toContain('- probe_echo (ctxbus-probe): Returns its input unchanged.');

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
      // the tool result of this one. In that turn the model calls the probe's tool through the
      // bridge, and the probe's agent_end sees the turn.
      rmSync(transcriptFile, { force: true }); // the earlier turns' agent_end wrote it too
      const echoAt = world.model.requests.length;
      world.reply = (_request, index) =>
        index === echoAt
          ? callTool('probe_echo', { text: 'ping-42' })
          : { text: 'It is recorded.' };
      const third = await turnAfter(
        'status',
        'Build 3 is green (marker cache-c3d2)',
        'Is it recorded?',
        2,
      );
      const echoed = world.model.requests[third.before + 1];
      expect(echoed && toolResults(echoed).join('\n')).toContain('echo: ping-42');
      expect(third.run.json?.payloads).toEqual([
        expect.objectContaining({ text: 'It is recorded.' }),
      ]);
      await waitUntil(() => existsSync(transcriptFile), 'agent_end to write the turn');
      const transcript = probeTranscript(transcriptFile);
      expect(transcript.success).toBe(true);
      // From the turn's user message: the tool call, its result and the reply (then OpenClaw's
      // own `custom` entries, e.g. its tool-search catalog state, may follow). agent_end sees the
      // user's own text, without what before_prompt_build added.
      const asked = transcript.messages.findLastIndex(
        (message) =>
          message.role === 'user' && JSON.stringify(message.content).includes('Is it recorded?'),
      );
      expect(asked).toBeGreaterThanOrEqual(0);
      expect(transcript.messages.slice(asked, asked + 4).map((message) => message.role)).toEqual([
        'user',
        'assistant',
        'toolResult',
        'assistant',
      ]);
      expect(JSON.stringify(transcript.messages[asked])).not.toContain(MARKER);
      expect(JSON.stringify(transcript.messages[asked])).not.toContain(OPEN_BLOCK);
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
      // The kit's guard (TEST_WAIT_MS), not a speed bound: the item may arrive late on a busy machine.
      await subscriber.waitFor(() =>
        subscriber.items().some((event) => event.item.title === title),
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
        // The probe's prependContext and appendContext reach only the request of the turn they
        // were returned for: OpenClaw keeps the prompt in the history without them (ctxbus keeps
        // its block there through before_message_write), so they come out of the earlier request.
        const resent = JSON.stringify(later.messages.slice(0, kept.length));
        expect(resent).not.toContain(`[${MARKER}:prependContext]`);
        expect(resent).toBe(withoutProbeTurnText(JSON.stringify(kept)));
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
