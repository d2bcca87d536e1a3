import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { waitUntil } from '@ctxbus/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OpenClawHome } from './openclaw-harness.js';
import { createOpenClawHome, openClawUnavailable } from './openclaw-harness.js';
import type {
  ChatCompletionsRequest,
  ScriptedOpenAiModel,
  ScriptedOpenAiReply,
} from './scripted-openai-model.js';
import {
  roleText,
  startScriptedOpenAiModel,
  toolNames,
  toolResults,
} from './scripted-openai-model.js';

// The real OpenClaw CLI from npm with a fixture plugin installed the way a user installs one,
// the model played by a local OpenAI-compatible server: proves the plugin surface the ctxbus
// adapter relies on (prompt hook, tool, agent_end). Skips, saying why, when the binary or a
// recent enough Node is missing, unless CTXBUS_REQUIRE_OPENCLAW=1 (CI), where it fails instead.

const FIXTURE = resolve(import.meta.dirname, '../fixtures/openclaw-probe-plugin');
const PLUGIN_ID = 'ctxbus-probe';
const MARKER = 'probe-marker-5d1e';

const required = process.env.CTXBUS_REQUIRE_OPENCLAW === '1';
const unavailable = openClawUnavailable();
const skip = unavailable !== null && !required;
const because = unavailable ? ` (skipped: ${unavailable})` : '';
const openClawIt = skip ? it.skip : it;

let reply: (request: ChatCompletionsRequest, index: number) => ScriptedOpenAiReply = () => ({
  text: 'ok',
});
let model: ScriptedOpenAiModel;
let openclaw: OpenClawHome;
let transcriptFile: string;

beforeAll(async () => {
  if (skip) return;
  model = await startScriptedOpenAiModel((request, index) => reply(request, index));
  openclaw = createOpenClawHome({ modelBaseUrl: model.baseUrl });
  transcriptFile = join(openclaw.home, 'agent-end.json');
  // A local directory is copied into $OPENCLAW_STATE_DIR/extensions/<id>; --force confirms a
  // source outside ClawHub, --accept-capabilities the tools the manifest declares.
  const installed = await openclaw.run([
    'plugins',
    'install',
    '--force',
    '--accept-capabilities',
    FIXTURE,
  ]);
  expect(installed.code, installed.stdout + installed.stderr).toBe(0);
  // Install writes `plugins.entries.<id>: { enabled: true }` only; conversation hooks stay
  // blocked until allowConversationAccess, and `config` becomes the plugin's api.pluginConfig.
  const config = openclaw.readConfig() as { plugins: { entries: Record<string, object> } };
  config.plugins.entries[PLUGIN_ID] = {
    ...config.plugins.entries[PLUGIN_ID],
    hooks: { allowConversationAccess: true },
    config: { transcriptFile, marker: MARKER },
  };
  openclaw.writeConfig(config);
});

afterAll(async () => {
  await model?.close();
  openclaw?.remove();
});

describe(`OpenClaw with a local plugin installed${because}`, () => {
  openClawIt(
    'installs into the state dir and plugins inspect --runtime shows it loaded',
    async () => {
      expect(existsSync(join(openclaw.stateDir, 'extensions', PLUGIN_ID, 'index.js'))).toBe(true);
      const { run, json } = await openclaw.inspectPlugin(PLUGIN_ID);
      expect(run.code, run.stderr).toBe(0);
      const inspected = json as {
        plugin: { status: string; toolNames: string[]; enabled: boolean };
        typedHooks: { name: string }[];
        diagnostics: { message: string }[];
        install: { source: string; installPath: string };
      };
      expect(inspected.plugin).toMatchObject({ status: 'loaded', enabled: true });
      expect(inspected.plugin.toolNames).toEqual(['probe_echo']);
      expect(inspected.typedHooks.map((hook) => hook.name).sort()).toEqual([
        'agent_end',
        'before_prompt_build',
      ]);
      expect(inspected.diagnostics).toEqual([]);
      expect(inspected.install).toMatchObject({
        source: 'path',
        installPath: join(openclaw.stateDir, 'extensions', PLUGIN_ID),
      });
    },
  );

  openClawIt(
    'puts before_prompt_build text in the request, runs probe_echo through tool_call, and agent_end sees the turn',
    async () => {
      // Tool Search is on by default: plugin tools are not in `tools` but listed in the system
      // prompt, and the model calls them through the `tool_call` bridge.
      const before = model.requests.length;
      reply = (_request, index) =>
        index === before
          ? {
              toolCall: {
                name: 'tool_call',
                arguments: { id: 'probe_echo', args: { text: 'ping-42' } },
              },
            }
          : { text: 'Echoed it.' };
      const run = await openclaw.agent('Echo ping-42 back to me', { sessionId: randomUUID() });
      expect(run.code, run.stderr).toBe(0);
      expect(run.json?.payloads).toEqual([expect.objectContaining({ text: 'Echoed it.' })]);

      const [first, second] = model.requests.slice(before);
      expect(first && second).toBeTruthy();
      if (!first || !second) return;
      // Every field reaches the model: the System ones in the system message, the others
      // around the user's prompt.
      const system = roleText(first, 'system');
      expect(system).toContain(`[${MARKER}:prependSystemContext]`);
      expect(system).toContain(`[${MARKER}:appendSystemContext]`);
      const user = roleText(first, 'user');
      expect(user).toMatch(
        new RegExp(
          `\\[${MARKER}:prependContext\\][\\s\\S]*Echo ping-42 back to me[\\s\\S]*\\[${MARKER}:appendContext\\]`,
        ),
      );
      expect(toolNames(first)).toContain('tool_call');
      expect(toolNames(first)).not.toContain('probe_echo');
      expect(system).toContain('- probe_echo (ctxbus-probe): Returns its input unchanged.');
      expect(toolResults(second).join('\n')).toContain('echo: ping-42');

      await waitUntil(() => existsSync(transcriptFile), 'agent_end to write the turn');
      const transcript = JSON.parse(readFileSync(transcriptFile, 'utf8')) as {
        success: boolean;
        messages: { role: string; content: unknown }[];
      };
      expect(transcript.success).toBe(true);
      // Then OpenClaw's own `custom` entries (e.g. its tool-search catalog state) may follow.
      expect(transcript.messages.map((message) => message.role).slice(0, 4)).toEqual([
        'user',
        'assistant',
        'toolResult',
        'assistant',
      ]);
      // agent_end sees the user's own text, without what before_prompt_build added.
      expect(JSON.stringify(transcript.messages[0])).toContain('Echo ping-42 back to me');
      expect(JSON.stringify(transcript.messages[0])).not.toContain(MARKER);
    },
  );

  openClawIt(
    'with tools.toolSearch false, probe_echo is a direct tool the model calls by name',
    async () => {
      openclaw.writeConfig({ ...openclaw.readConfig(), tools: { toolSearch: false } });
      const before = model.requests.length;
      reply = (_request, index) =>
        index === before
          ? {
              text: 'Calling it.',
              toolCall: { name: 'probe_echo', arguments: { text: 'direct-7' } },
            }
          : { text: 'Direct echo done.' };
      const run = await openclaw.agent('Echo direct-7', { sessionId: randomUUID() });
      expect(run.code, run.stderr).toBe(0);
      const [first, second] = model.requests.slice(before);
      // A fresh session: nothing of the earlier turn's tool call is replayed.
      expect(first && toolResults(first)).toEqual([]);
      expect(first && toolNames(first)).toContain('probe_echo');
      expect(second && toolResults(second).join('\n')).toContain('echo: direct-7');
      expect(run.json?.payloads).toEqual([expect.objectContaining({ text: 'Direct echo done.' })]);
    },
  );
});
