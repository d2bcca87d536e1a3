// The real Claude Code CLI for the cache section: `ctxbus install claude-code` in a project of a
// private HOME, then one `claude -p` per turn, the first with `--session-id`, the later ones
// `--resume` of that session, the model played by the scripted Messages API server.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { HubProcess } from '@ctxbus/test-kit';
import { removeDir, runCli, runtimeToken } from '@ctxbus/test-kit';
import type { MessagesRequest } from '@ctxbus/test-kit/scripted-model';
import { startScriptedModel } from '@ctxbus/test-kit/scripted-model';
import type { CacheSession } from './cache-session.ts';
import { lastUserText } from './cache-session.ts';

const CLAUDE = resolve(import.meta.dirname, '../node_modules/.bin/claude');
/** How Claude Code labels a hook's context in the messages (only ctxbus's hooks are installed). */
const HOOK_CONTEXT = /^(SessionStart|UserPromptSubmit) hook additional context: /;
/** What Claude Code appends to the first hook context, in the same text block. */
const ENVIRONMENT = '\n\n# Environment\n';

/** The hook context in a text of the request, without what Claude Code appended to it. */
function hookContext(text: string): string {
  if (!HOOK_CONTEXT.test(text)) return '';
  const body = text.replace(HOOK_CONTEXT, '');
  const end = body.indexOf(ENVIRONMENT);
  return end < 0 ? body : body.slice(0, end);
}

function runClaude(args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((done, fail) => {
    const child = spawn(CLAUDE, args, { cwd, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.once('error', fail);
    child.once('exit', (code) =>
      code === 0 ? done(stderr) : fail(new Error(`claude -p exited ${code}: ${stderr}`)),
    );
  });
}

export async function claudeCodeSession(hub: HubProcess): Promise<CacheSession> {
  const token = await runtimeToken(hub, 'bench', 'claude-code');
  const home = mkdtempSync(join(tmpdir(), 'ctxbus-bench-cache-claude-'));
  const project = join(home, 'project');
  mkdirSync(project);
  const model = await startScriptedModel(() => ({ text: 'Understood.' }));
  const installed = await runCli(
    ['install', 'claude-code', '--project', project, '--url', hub.url, '--token', token],
    { env: { HOME: home } },
  );
  if (installed.code !== 0) throw new Error(`install claude-code failed: ${installed.stderr}`);
  const env = {
    PATH: process.env.PATH,
    HOME: home,
    ANTHROPIC_BASE_URL: model.url,
    ANTHROPIC_API_KEY: 'sk-ant-bench-scripted-model',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_TELEMETRY: '1',
  };
  const session = randomUUID();
  let turns = 0;
  return {
    runtime: 'Claude Code',
    format: 'anthropic-messages',
    async turn(prompt) {
      const from = model.requests.length;
      const resume = turns++ === 0 ? ['--session-id', session] : ['--resume', session];
      await runClaude(['-p', prompt, ...resume], project, env);
      // The turn's conversation request: the one whose last user message is the prompt (Claude
      // Code may ask the model other things, a title, on the side).
      const sent = model.requests
        .slice(from)
        .filter((request: MessagesRequest) => lastUserText(request.messages).includes(prompt));
      const last = sent.at(-1);
      if (!last) throw new Error(`no request of Claude Code carried the prompt "${prompt}"`);
      return last as unknown as Record<string, unknown>;
    },
    ours: hookContext,
    async close() {
      await model.close();
      removeDir(home);
    },
  };
}
