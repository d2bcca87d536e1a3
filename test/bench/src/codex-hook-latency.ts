// Codex hook latency: the real bundled hook script, spawned the way Codex runs it (a fresh node
// process, `--url <hub>`, the event JSON on stdin), against a real hub with a realistic context,
// and the tokens it injects: at session start, and per prompt when one item is new.
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { createHubLite } from '@ctxbus/client/light';
import { countTokens } from '@ctxbus/core';
import type { HubProcess } from '@ctxbus/test-kit';
import { call, runtimeToken, tempDir } from '@ctxbus/test-kit';
import type { Row } from './stats.ts';
import { ms, percentile } from './stats.ts';
import { teamItems } from './team-items.ts';

export const CODEX_HOOK = resolve(
  import.meta.dirname,
  '../../../packages/adapter-codex/plugin/dist/ctxbus-codex-hook.js',
);
/** The goal for what a hook adds to a Codex turn. */
const TARGET_P99_MS = 100;

function runHook(
  hub: HubProcess,
  input: Record<string, unknown>,
  env: Record<string, string>,
): { ms: number; context: string } {
  const started = performance.now();
  const result = spawnSync(process.execPath, [CODEX_HOOK, '--url', hub.url], {
    input: JSON.stringify(input),
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
  const elapsed = performance.now() - started;
  // A hook that failed (or a bundle that is not built) would time an error: refuse to.
  if (result.error || result.status !== 0) {
    throw new Error(
      `the hook ${CODEX_HOOK} failed (exit ${result.status}): ${result.error?.message ?? result.stderr}`,
    );
  }
  const parsed = JSON.parse(result.stdout || '{}') as {
    hookSpecificOutput?: { additionalContext?: string };
  };
  return { ms: elapsed, context: parsed.hookSpecificOutput?.additionalContext ?? '' };
}

const timing = (metric: string, values: number[]): Row => {
  const p99 = percentile(values, 99);
  return {
    section: 'codex',
    metric,
    value: `${ms(percentile(values, 50))} / ${ms(p99)}`,
    target: `p99 <= ${TARGET_P99_MS} ms`,
    ok: p99 <= TARGET_P99_MS,
  };
};

export async function benchCodexHooks(hub: HubProcess, runs: number): Promise<Row[]> {
  const writer = await runtimeToken(hub, 'bench', 'claude-code');
  const token = await runtimeToken(hub, 'bench', 'codex');
  const items = [...teamItems(), { type: 'status', title: 'Current focus: the hub', key: 'focus' }];
  await call(hub.url, 'POST', '/api/context', { token: writer, body: { items } });
  const env = { CTXBUS_CODEX_TOKEN: token, CTXBUS_STATE_DIR: tempDir('ctxbus-bench-codex-') };
  const base = { cwd: '/tmp/p', model: 'gpt-5', permission_mode: 'default' };
  // One warm-up run fills Node's compile cache, as any earlier session would have.
  runHook(hub, { ...base, session_id: 'warm', hook_event_name: 'SessionStart' }, env);

  const start: number[] = [];
  let startContext = '';
  for (let index = 0; index < runs; index++) {
    const event = { ...base, session_id: `s-${index}`, hook_event_name: 'SessionStart' };
    const run = runHook(hub, { ...event, source: 'startup' }, env);
    start.push(run.ms);
    startContext = run.context;
  }
  // Writes between hook runs go through the light client (a connection per call): fetch's kept
  // connection, idle while the hooks run, can meet the hub closing it.
  const other = createHubLite({ url: hub.url, token: writer, timeoutMs: 10_000, runtime: 'x' });
  const prompt: number[] = [];
  const stop: number[] = [];
  const perTurn: number[] = [];
  for (let index = 0; index < runs; index++) {
    // One new item from another runtime before each prompt: a turn with news.
    await other.write([
      { type: 'discovery', title: `Bench finding ${index}`, content: 'Found while testing.' },
    ]);
    const turn = { ...base, session_id: 's-0', turn_id: `t-${index}` };
    const run = runHook(
      hub,
      { ...turn, hook_event_name: 'UserPromptSubmit', prompt: 'go on' },
      env,
    );
    prompt.push(run.ms);
    perTurn.push(countTokens(run.context));
    stop.push(
      runHook(
        hub,
        { ...turn, hook_event_name: 'Stop', stop_hook_active: false, last_assistant_message: 'ok' },
        env,
      ).ms,
    );
  }
  return [
    timing('SessionStart hook p50 / p99', start),
    timing('UserPromptSubmit hook p50 / p99 (one new item)', prompt),
    timing('Stop hook p50 / p99', stop),
    {
      section: 'codex',
      metric: 'tokens injected at session start',
      value: `${countTokens(startContext)} tokens (${Buffer.byteLength(startContext)} bytes; Codex keeps 10,000)`,
    },
    {
      section: 'codex',
      metric: 'tokens injected per turn with one new item (p50 / max)',
      value: `${percentile(perTurn, 50)} / ${Math.max(...perTurn)} tokens`,
    },
  ];
}
