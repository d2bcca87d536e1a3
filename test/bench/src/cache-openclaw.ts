// The real OpenClaw CLI for the cache section: `ctxbus install openclaw` into an OpenClaw home
// of its own, then one `openclaw agent --local --session-id <id>` per turn, the model played by
// a scripted server of the provider's API (Chat Completions or Responses).
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join, resolve } from 'node:path';
import type { HubProcess } from '@ctxbus/test-kit';
import { CLI, runtimeToken } from '@ctxbus/test-kit';
import type { OpenClawHome, OpenClawModelOptions } from '@ctxbus/test-kit/openclaw-home';
import { createOpenClawHome, openClawUnavailable } from '@ctxbus/test-kit/openclaw-home';
import { startScriptedOpenAiModel } from '@ctxbus/test-kit/scripted-openai-model';
import { startScriptedResponsesModel } from '@ctxbus/test-kit/scripted-responses-model';
import type { CacheSession, Message } from './cache-session.ts';
import { contentText, lastUserText } from './cache-session.ts';

const OPENCLAW = resolve(import.meta.dirname, '../node_modules/.bin/openclaw');
/**
 * What OpenClaw ends a request with itself (its runtime context: exec sessions, subagents); kept
 * in the next request only where the provider's transcript policy says so (README, Prompt cache).
 */
export const OPENCLAW_OWN = '<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>';
const BLOCK_OPEN = '<team-context source="ctxbus">';
const BLOCK_CLOSE = '</team-context>';

/** The ctxbus block in a user message (the plugin puts it before the prompt), or ''. */
function teamContext(text: string): string {
  const start = text.indexOf(BLOCK_OPEN);
  const end = text.indexOf(BLOCK_CLOSE, start);
  return start < 0 || end < 0 ? '' : text.slice(start, end + BLOCK_CLOSE.length);
}

/**
 * `ctxbus install openclaw` with only the OpenClaw home's environment: under vitest
 * (NODE_ENV=test, VITEST_WORKER_ID) OpenClaw takes itself for a test and prints nothing.
 */
function install(openclaw: OpenClawHome, url: string, token: string): Promise<string> {
  const args = ['install', 'openclaw', '--url', url, '--token', token, '--openclaw', OPENCLAW];
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { ...openclaw.env, CTXBUS_CONFIG_DIR: join(openclaw.home, 'ctxbus-config') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once('exit', (code) =>
      code === 0 ? done(output) : fail(new Error(`install openclaw exited ${code}: ${output}`)),
    );
  });
}

/** The scripted model of either API: what the session needs of it. */
interface ScriptedServer {
  baseUrl: string;
  requests: readonly object[];
  close(): Promise<void>;
}

function scriptedServer(api: OpenClawModelOptions['api']): Promise<ScriptedServer> {
  return api === 'openai-responses'
    ? startScriptedResponsesModel(() => ({ text: 'Understood.' }))
    : startScriptedOpenAiModel(() => ({ text: 'Understood.' }));
}

export async function openClawSession(
  hub: HubProcess,
  modelOptions: Required<OpenClawModelOptions>,
): Promise<CacheSession> {
  const unavailable = openClawUnavailable(OPENCLAW);
  if (unavailable) throw new Error(`OpenClaw cannot run: ${unavailable}`);
  const token = await runtimeToken(hub, 'bench', 'openclaw');
  const model = await scriptedServer(modelOptions.api);
  const openclaw = createOpenClawHome({
    bin: OPENCLAW,
    modelBaseUrl: model.baseUrl,
    model: modelOptions,
  });
  const format = modelOptions.api === 'openai-responses' ? 'responses' : 'chat-completions';
  const list = format === 'responses' ? 'input' : 'messages';
  try {
    await install(openclaw, hub.url, token);
  } catch (error) {
    await model.close();
    openclaw.remove();
    throw error;
  }
  const sessionId = randomUUID();
  return {
    runtime: `OpenClaw (${modelOptions.provider} provider, ${modelOptions.api})`,
    format,
    async turn(prompt) {
      const from = model.requests.length;
      const run = await openclaw.agent(prompt, { sessionId });
      if (run.code !== 0) throw new Error(`openclaw agent exited ${run.code}: ${run.stderr}`);
      const sent = (model.requests.slice(from) as Record<string, unknown>[]).filter((request) =>
        // The prompt is in the last user message but the runtime context OpenClaw appends.
        lastUserText(
          ((request[list] ?? []) as Message[]).filter(
            (message) => !contentText(message.content).startsWith(OPENCLAW_OWN),
          ),
        ).includes(prompt),
      );
      const last = sent.at(-1);
      if (!last) throw new Error(`no request of OpenClaw carried the prompt "${prompt}"`);
      return last;
    },
    ours: teamContext,
    unkept: (item) => item.role === 'user' && contentText(item.content).startsWith(OPENCLAW_OWN),
    async close() {
      await model.close();
      openclaw.remove();
    },
  };
}
