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
  script = CODEX_HOOK,
): { ms: number; context: string } {
  const started = performance.now();
  const result = spawnSync(process.execPath, [script, '--url', hub.url], {
    input: JSON.stringify(input),
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
  const elapsed = performance.now() - started;
  // A hook that failed (or a bundle that is not built) would time an error: refuse to.
  if (result.error || result.status !== 0) {
    throw new Error(
      `the hook ${script} failed (exit ${result.status}): ${result.error?.message ?? result.stderr}`,
    );
  }
  const parsed = JSON.parse(result.stdout || '{}') as {
    hookSpecificOutput?: { additionalContext?: string };
  };
  return { ms: elapsed, context: parsed.hookSpecificOutput?.additionalContext ?? '' };
}

/** Node's own start and exit, spawned the same way: the floor under every hook's time. */
function runBareNode(): number {
  const started = performance.now();
  spawnSync(process.execPath, ['-e', ''], { input: '{}', encoding: 'utf8' });
  return performance.now() - started;
}

const timing = (metric: string, values: number[], current?: number[]): Row => {
  const p99 = percentile(values, 99);
  const value = `${ms(percentile(values, 50))} / ${ms(p99)}`;
  // A baseline's row: its p50 as a multiple of this hook's, from the same runs; no target.
  if (current) {
    const ratio = percentile(values, 50) / percentile(current, 50);
    return { section: 'codex', metric, value: `${value} (${ratio.toFixed(2)}x)` };
  }
  return {
    section: 'codex',
    metric,
    value,
    target: `p99 <= ${TARGET_P99_MS} ms`,
    ok: p99 <= TARGET_P99_MS,
  };
};

/** A hook script and what it measured, per event. */
interface Timed {
  script: string;
  stateDir: string;
  start: number[];
  prompt: number[];
  stop: number[];
}

/**
 * The hooks' latency, and Node's bare start beside them in the same loop. With
 * CTXBUS_BENCH_CODEX_BASELINE naming another build's ctxbus-codex-hook.js (e.g. a copy of
 * plugin/dist from before a change), that hook runs alternated with this one, each event right
 * after this one's, and its rows carry the ratio: an A/B on the same machine load.
 */
export async function benchCodexHooks(hub: HubProcess, runs: number): Promise<Row[]> {
  const writer = await runtimeToken(hub, 'bench', 'claude-code');
  const token = await runtimeToken(hub, 'bench', 'codex');
  const items = [...teamItems(), { type: 'status', title: 'Current focus: the hub', key: 'focus' }];
  await call(hub.url, 'POST', '/api/context', { token: writer, body: { items } });
  const baseline = process.env.CTXBUS_BENCH_CODEX_BASELINE;
  const hooks: Timed[] = [CODEX_HOOK, ...(baseline ? [resolve(baseline)] : [])].map((script) => ({
    script,
    stateDir: tempDir('ctxbus-bench-codex-'),
    start: [],
    prompt: [],
    stop: [],
  }));
  const env = (hook: Timed) => ({ CTXBUS_CODEX_TOKEN: token, CTXBUS_STATE_DIR: hook.stateDir });
  const base = { cwd: '/tmp/p', model: 'gpt-5', permission_mode: 'default' };
  // One warm-up run fills Node's compile cache, as any earlier session would have.
  for (const hook of hooks) {
    runHook(
      hub,
      { ...base, session_id: 'warm', hook_event_name: 'SessionStart' },
      env(hook),
      hook.script,
    );
  }
  const bare: number[] = [];
  let startContext = '';
  for (let index = 0; index < runs; index++) {
    const event = { ...base, session_id: `s-${index}`, hook_event_name: 'SessionStart' };
    for (const hook of hooks) {
      const run = runHook(hub, { ...event, source: 'startup' }, env(hook), hook.script);
      hook.start.push(run.ms);
      if (hook.script === CODEX_HOOK) startContext = run.context;
    }
    bare.push(runBareNode());
  }
  // Writes between hook runs go through the light client (a connection per call): fetch's kept
  // connection, idle while the hooks run, can meet the hub closing it.
  const other = createHubLite({ url: hub.url, token: writer, timeoutMs: 10_000, runtime: 'x' });
  const perTurn: number[] = [];
  for (let index = 0; index < runs; index++) {
    // One new item from another runtime before each prompt: a turn with news.
    await other.write([
      { type: 'discovery', title: `Bench finding ${index}`, content: 'Found while testing.' },
    ]);
    const turn = { ...base, session_id: 's-0', turn_id: `t-${index}` };
    for (const hook of hooks) {
      const run = runHook(
        hub,
        { ...turn, hook_event_name: 'UserPromptSubmit', prompt: 'go on' },
        env(hook),
        hook.script,
      );
      hook.prompt.push(run.ms);
      if (hook.script === CODEX_HOOK) perTurn.push(countTokens(run.context));
    }
    for (const hook of hooks) {
      const stop = { ...turn, hook_event_name: 'Stop', stop_hook_active: false };
      hook.stop.push(
        runHook(hub, { ...stop, last_assistant_message: 'ok' }, env(hook), hook.script).ms,
      );
    }
    bare.push(runBareNode());
  }
  const [current, old] = hooks as [Timed, Timed | undefined];
  return [
    timing('SessionStart hook p50 / p99', current.start),
    timing('UserPromptSubmit hook p50 / p99 (one new item)', current.prompt),
    timing('Stop hook p50 / p99', current.stop),
    ...(old
      ? [
          timing(
            `SessionStart p50 / p99, baseline ${old.script} (x this hook's p50)`,
            old.start,
            current.start,
          ),
          timing('UserPromptSubmit p50 / p99, baseline', old.prompt, current.prompt),
          timing('Stop p50 / p99, baseline', old.stop, current.stop),
        ]
      : []),
    {
      section: 'codex',
      metric: 'node -e "" p50 / p99 (no hook: the floor, same loop)',
      value: `${ms(percentile(bare, 50))} / ${ms(percentile(bare, 99))}`,
    },
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
