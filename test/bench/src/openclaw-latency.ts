// OpenClaw plugin latency: what `before_prompt_build` adds to a turn, run in process as OpenClaw
// runs it (the plugin lives in the gateway), against a real hub process on loopback with a
// realistic context; and how many tokens it injects.
import { registerCtxbus } from '@ctxbus/adapter-openclaw';
import { countTokens } from '@ctxbus/core';
import type { HubProcess } from '@ctxbus/test-kit';
import { call, runtimeToken, tempDir } from '@ctxbus/test-kit';
import type { Row } from './stats.ts';
import { ms, percentile } from './stats.ts';

type PromptBuild = (
  event: { prompt: string; messages: unknown[] },
  context: { agentId: string },
) => Promise<{ prependContext?: string } | undefined>;

export async function benchOpenClaw(hub: HubProcess, turns: number): Promise<Row[]> {
  const writer = await runtimeToken(hub, 'bench', 'claude-code');
  const token = await runtimeToken(hub, 'bench', 'openclaw');
  const items = [
    ...Array.from({ length: 12 }, (_, index) => ({
      type: 'decision',
      title: `Decision ${index}: adopt the pattern for module ${index}`,
      content: 'Reasoning that explains the trade-offs at some length. '.repeat(6),
    })),
    ...Array.from({ length: 8 }, (_, index) => ({
      type: 'status',
      title: `Task T-${index} in progress`,
      scopeKey: `task:T-${index}`,
      content: 'Halfway there.',
    })),
    { type: 'alert', title: 'CI is red on main', urgency: 'blocking' },
    { type: 'request', title: 'Approve the release notes?', urgency: 'attention' },
  ];
  await call(hub.url, 'POST', '/api/context', { token: writer, body: { items } });
  let promptBuild: PromptBuild | undefined;
  const quiet = () => undefined;
  registerCtxbus(
    {
      id: 'ctxbus',
      pluginConfig: { url: hub.url, token, stateDir: tempDir('ctxbus-bench-openclaw-') },
      logger: { info: quiet, warn: quiet, error: quiet },
      registerTool: quiet,
      on(name: string, handler: unknown) {
        if (name === 'before_prompt_build') promptBuild = handler as PromptBuild;
      },
    } as never,
    { env: {} },
  );
  if (!promptBuild) throw new Error('the plugin registered no before_prompt_build handler');
  const run = async () => {
    const started = performance.now();
    const result = await promptBuild?.({ prompt: 'go on', messages: [] }, { agentId: 'main' });
    return { ms: performance.now() - started, text: result?.prependContext ?? '' };
  };
  await run(); // the agent's first turn; later ones list changes since it
  const latencies: number[] = [];
  const tokens: number[] = [];
  for (let index = 0; index < turns; index++) {
    // Every other turn, someone else changed something since this agent's last turn.
    if (index % 2 === 0) {
      await call(hub.url, 'POST', '/api/context', {
        token: writer,
        body: { type: 'status', title: `Claude Code finished step ${index}` },
      });
    }
    const turn = await run();
    latencies.push(turn.ms);
    tokens.push(countTokens(turn.text));
  }
  return [
    {
      section: 'openclaw',
      metric: 'before_prompt_build added latency p50 / p99',
      value: `${ms(percentile(latencies, 50))} / ${ms(percentile(latencies, 99))}`,
      target: 'p99 <= 50 ms',
      ok: percentile(latencies, 99) <= 50,
    },
    {
      section: 'openclaw',
      metric: 'tokens injected per turn (budget 2,000), p50 / max',
      value: `${percentile(tokens, 50)} / ${Math.max(...tokens)}`,
    },
  ];
}
