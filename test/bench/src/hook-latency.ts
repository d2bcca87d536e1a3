// Claude Code hook latency: the real bundled hook script, spawned the way Claude Code runs it
// (a fresh node process, the event JSON on stdin), against a real hub with a realistic context.
import { spawnSync } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { countTokens } from '@ctxbus/core';
import type { HubProcess } from '@ctxbus/test-kit';
import { call, runtimeToken, tempDir } from '@ctxbus/test-kit';
import type { Row } from './stats.ts';
import { ms, percentile } from './stats.ts';
import { teamItems } from './team-items.ts';

const here = dirname(fileURLToPath(import.meta.url));
export const HOOK = resolve(
  here,
  '../../../packages/adapter-claude-code/plugin/dist/ctxbus-claude-hook.js',
);

function runHook(
  input: Record<string, unknown>,
  env: Record<string, string>,
): { ms: number; stdout: string } {
  const started = performance.now();
  const result = spawnSync(process.execPath, [HOOK], {
    input: JSON.stringify(input),
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
  const elapsed = performance.now() - started;
  // A hook that failed (or a bundle that is not built) would time an error: refuse to.
  if (result.error || result.status !== 0) {
    throw new Error(
      `the hook ${HOOK} failed (exit ${result.status}): ${result.error?.message ?? result.stderr}`,
    );
  }
  return { ms: elapsed, stdout: result.stdout };
}

export async function benchHooks(hub: HubProcess, runs: number): Promise<Row[]> {
  const writer = await runtimeToken(hub, 'bench', 'openclaw');
  const token = await runtimeToken(hub, 'bench', 'claude-code');
  const items = [...teamItems(), { type: 'status', title: 'Current focus: the hub', key: 'focus' }];
  await call(hub.url, 'POST', '/api/context', { token: writer, body: { items } });
  const env = {
    CTXBUS_URL: hub.url,
    CTXBUS_TOKEN: token,
    CTXBUS_STATE_DIR: tempDir('ctxbus-bench-hooks-'),
  };
  // One warm-up run fills Node's compile cache, as any earlier session would have.
  runHook(
    { session_id: 'warm', cwd: '/tmp/p', hook_event_name: 'PostToolUse', tool_name: 'Read' },
    env,
  );

  const start: number[] = [];
  let injected = '';
  for (let index = 0; index < runs; index++) {
    const run = runHook(
      {
        session_id: `start-${index}`,
        cwd: '/tmp/p',
        hook_event_name: 'SessionStart',
        source: 'startup',
      },
      env,
    );
    start.push(run.ms);
    injected = run.stdout;
  }
  const prompt: number[] = [];
  for (let index = 0; index < runs; index++) {
    prompt.push(
      runHook(
        {
          session_id: 'start-0',
          cwd: '/tmp/p',
          hook_event_name: 'UserPromptSubmit',
          prompt: 'go on',
        },
        env,
      ).ms,
    );
  }
  const context =
    (JSON.parse(injected || '{}') as { hookSpecificOutput?: { additionalContext?: string } })
      .hookSpecificOutput?.additionalContext ?? '';
  const bare: number[] = [];
  for (let index = 0; index < Math.min(runs, 20); index++) {
    const started = performance.now();
    spawnSync(process.execPath, ['-e', '0']);
    bare.push(performance.now() - started);
  }
  return [
    {
      section: 'hooks',
      metric: 'SessionStart hook p50 / p99',
      value: `${ms(percentile(start, 50))} / ${ms(percentile(start, 99))}`,
    },
    {
      section: 'hooks',
      metric: 'UserPromptSubmit hook p50 / p99',
      value: `${ms(percentile(prompt, 50))} / ${ms(percentile(prompt, 99))}`,
    },
    {
      section: 'hooks',
      metric: 'of which: starting node itself (p50)',
      value: ms(percentile(bare, 50)),
    },
    {
      section: 'hooks',
      metric: 'tokens injected at session start',
      value: `${countTokens(context)} tokens (${context.length} chars)`,
    },
  ];
}
