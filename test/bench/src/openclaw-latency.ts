// OpenClaw plugin latency: what `before_prompt_build` adds to a turn, run in process as OpenClaw
// runs it (the plugin lives in the gateway), against a real hub process on loopback with a
// realistic context; and how many tokens it injects.
import { join } from 'node:path';
import { registerCtxbus } from '@ctxbus/adapter-openclaw';
import { createClient } from '@ctxbus/client';
import { countTokens } from '@ctxbus/core';
import {
  bootstrapSharedContext,
  createSharedContextBridge,
  sharedContextPaths,
  writeAgentOutput,
} from '@ctxbus/shared-context';
import type { HubProcess } from '@ctxbus/test-kit';
import { call, openStream, runtimeToken, tempDir } from '@ctxbus/test-kit';
import type { Row } from './stats.ts';
import { ms, percentile } from './stats.ts';
import { teamItems } from './team-items.ts';

type PromptBuild = (
  event: { prompt: string; messages: unknown[] },
  context: { agentId: string },
) => Promise<{ prependContext?: string } | undefined>;

export async function benchOpenClaw(hub: HubProcess, turns: number): Promise<Row[]> {
  const writer = await runtimeToken(hub, 'bench', 'claude-code');
  const token = await runtimeToken(hub, 'bench', 'openclaw');
  const items = [...teamItems()];
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

/**
 * The shared-context bridge: an agent output written to the directory -> an item on the bus ->
 * an SSE subscriber (standing in for Claude Code), with the bridge following the directory.
 */
export async function benchSharedContextBridge(hub: HubProcess, files: number): Promise<Row[]> {
  const token = await runtimeToken(hub, 'bench-shared', 'openclaw');
  const reader = await runtimeToken(hub, 'bench-shared', 'claude-code');
  const paths = sharedContextPaths({
    dir: join(tempDir('ctxbus-bench-shared-'), 'shared-context'),
  });
  bootstrapSharedContext(paths);
  const bridge = createSharedContextBridge({
    paths,
    client: createClient({ url: hub.url, token }),
    agentRuntime: 'openclaw',
    stateFile: join(paths.root, '.bridge-state.json'),
  });
  await bridge.start();
  const stream = openStream(hub.url, reader, { query: 'tags=shared-context' });
  await stream.ready;
  const latencies: number[] = [];
  try {
    for (let index = 0; index < files; index++) {
      const title = `Bench output ${index}`;
      const started = performance.now();
      writeAgentOutput(paths, { agent: 'research', title, body: `Finding number ${index}.` });
      await stream.waitFor(
        () => stream.items().some((event) => event.item.title === title),
        30_000,
      );
      latencies.push(performance.now() - started);
    }
  } finally {
    stream.close();
    await bridge.stop();
  }
  return [
    {
      section: 'openclaw',
      metric: 'shared-context bridge: file -> bus -> SSE p50 / p99',
      value: `${ms(percentile(latencies, 50))} / ${ms(percentile(latencies, 99))}`,
    },
  ];
}
