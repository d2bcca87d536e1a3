// The real Codex CLI for the cache section: `ctxbus install codex` into a Codex home of its own
// whose model provider is the scripted Responses API server, then `codex exec --json` for the
// first turn (its `thread.started` event names the session) and `codex exec resume <id>` for
// each later one.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { HubProcess } from '@ctxbus/test-kit';
import { removeDir, runCli, runtimeToken, tempDir } from '@ctxbus/test-kit';
import type { ResponsesInputItem } from '@ctxbus/test-kit/scripted-responses-model';
import { startScriptedResponsesModel } from '@ctxbus/test-kit/scripted-responses-model';
import type { CacheSession } from './cache-session.ts';
import { lastUserText } from './cache-session.ts';

const CODEX = resolve(import.meta.dirname, '../node_modules/.bin/codex');
/** The line every ctxbus hook context for Codex opens with (a developer message of its own). */
const DATA_LABEL = '(ctxbus: ';

function runCodex(args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((done, fail) => {
    const child = spawn(CODEX, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.once('error', fail);
    child.once('exit', (code) =>
      code === 0 ? done(stdout) : fail(new Error(`codex exec exited ${code}: ${stderr}`)),
    );
  });
}

/** The session id in `codex exec --json` output (its `thread.started` event). */
function threadId(jsonl: string): string {
  for (const line of jsonl.split('\n')) {
    if (!line.startsWith('{')) continue;
    const event = JSON.parse(line) as { type?: string; thread_id?: string };
    if (event.type === 'thread.started' && event.thread_id) return event.thread_id;
  }
  throw new Error(`codex exec --json printed no thread.started event: ${jsonl.slice(0, 500)}`);
}

function writeProvider(codexHome: string, baseUrl: string): void {
  mkdirSync(codexHome, { recursive: true });
  writeFileSync(
    join(codexHome, 'config.toml'),
    [
      'model = "fake-model"',
      'model_provider = "scripted"',
      '',
      '[model_providers.scripted]',
      'name = "scripted"',
      `base_url = "${baseUrl}"`,
      'wire_api = "responses"',
      '',
    ].join('\n'),
  );
}

export async function codexSession(hub: HubProcess): Promise<CacheSession> {
  const token = await runtimeToken(hub, 'bench', 'codex');
  const home = tempDir('ctxbus-bench-cache-codex-');
  const project = join(home, 'project');
  mkdirSync(project, { recursive: true });
  const model = await startScriptedResponsesModel(() => ({ text: 'Understood.' }));
  const env = {
    PATH: process.env.PATH,
    HOME: home,
    CODEX_HOME: join(home, '.codex'),
    CTXBUS_CONFIG_DIR: join(home, 'ctxbus-config'),
    CONTEXT_BUS_CONFIG: join(home, 'ctxbus-config', 'context-bus', 'config.yaml'),
  };
  writeProvider(env.CODEX_HOME, model.baseUrl);
  const installed = await runCli(
    ['install', 'codex', '--codex', CODEX, '--url', hub.url, '--token', token, '--team', 'bench'],
    { env, timeoutMs: 240_000 },
  );
  if (installed.code !== 0) {
    await model.close();
    removeDir(home);
    throw new Error(`install codex failed: ${installed.stdout}${installed.stderr}`);
  }
  let session = '';
  return {
    runtime: 'Codex',
    format: 'responses',
    async turn(prompt) {
      const from = model.requests.length;
      if (!session) {
        session = threadId(
          await runCodex(['exec', '--json', '--skip-git-repo-check', prompt], project, env),
        );
      } else {
        await runCodex(['exec', 'resume', '--skip-git-repo-check', session, prompt], project, env);
      }
      const sent = model.requests
        .slice(from)
        .filter((request) =>
          lastUserText(request.input as (ResponsesInputItem & { role?: string })[]).includes(
            prompt,
          ),
        );
      const last = sent.at(-1);
      if (!last) throw new Error(`no request of Codex carried the prompt "${prompt}"`);
      return last as unknown as Record<string, unknown>;
    },
    ours: (text) => (text.startsWith(DATA_LABEL) ? text : ''),
    async close() {
      await model.close();
      removeDir(home);
    },
  };
}
