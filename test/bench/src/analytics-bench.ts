import { performance } from 'node:perf_hooks';
import type { HubProcess } from '@ctxbus/test-kit';
import { call } from '@ctxbus/test-kit';
import type { Row } from './stats.ts';
import { ms, percentile } from './stats.ts';

// What context analytics cost the hot path (issue 27, part 13): the shared bundle with its
// injections recorded (the usage recorder's counters) against the same bundle as a preview
// (recorded nowhere), alternated in one run on one hub so the machine's load hits both alike;
// then the analytics read itself, and whether every served bundle was counted.

async function timed(work: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await work();
  return performance.now() - start;
}

async function fill(hub: HubProcess, token: string, count: number): Promise<void> {
  const types = ['decision', 'discovery', 'status', 'request', 'alert'];
  for (let start = 0; start < count; start += 500) {
    const items = Array.from({ length: Math.min(500, count - start) }, (_, offset) => {
      const index = start + offset;
      return {
        type: types[index % types.length],
        title: `bench item ${index} about ${['queues', 'deploys', 'tests', 'billing'][index % 4]}`,
        summary: `summary of bench item ${index}`,
        ...(index % 50 === 0 && { key: `project/bench-${index}` }),
      };
    });
    const response = await call(hub.url, 'POST', '/api/context', { token, body: { items } });
    if (response.status !== 201) throw new Error(`fill failed: ${response.status}`);
  }
}

export async function benchAnalytics(
  hub: HubProcess,
  token: string,
  options: { items: number; repeats: number; log: (line: string) => void },
): Promise<Row[]> {
  options.log(`analytics: ${options.items} items, ${options.repeats} bundles each way`);
  await fill(hub, token, options.items);
  const before = await call(hub.url, 'GET', '/api/analytics?window=1', { token });
  const injectedBefore = before.body.totals.injected as number;
  const recorded: number[] = [];
  const preview: number[] = [];
  let served = 0;
  for (let index = 0; index < options.repeats; index++) {
    const counted = () =>
      call(hub.url, 'GET', '/api/context/shared', { token }).then((response) => {
        served += new Set(
          [
            ...response.body.identity.entries,
            ...response.body.sections.flatMap((section: { entries: unknown[] }) => section.entries),
          ].flatMap((entry: { refs: { id: string }[] }) => entry.refs.map((ref) => ref.id)),
        ).size;
      });
    const look = () => call(hub.url, 'GET', '/api/context/shared?preview=true', { token });
    // Alternate which goes first, so neither always meets a warmer cache.
    if (index % 2 === 0) {
      recorded.push(await timed(counted));
      preview.push(await timed(look));
    } else {
      preview.push(await timed(look));
      recorded.push(await timed(counted));
    }
  }
  const reads: number[] = [];
  let report: { totals: { injected: number } } | null = null;
  for (let index = 0; index < Math.max(5, Math.floor(options.repeats / 10)); index++) {
    reads.push(
      await timed(async () => {
        report = (await call(hub.url, 'GET', '/api/analytics?window=7&limit=20', { token })).body;
      }),
    );
  }
  const counted = (report as { totals: { injected: number } } | null)?.totals.injected ?? 0;
  const p50 = percentile(recorded, 50);
  const base = percentile(preview, 50);
  const ratio = p50 / base;
  return [
    {
      section: 'analytics',
      metric: `shared bundle p50, recorded @ ${options.items} items`,
      value: ms(p50),
    },
    { section: 'analytics', metric: `shared bundle p50, preview (not recorded)`, value: ms(base) },
    {
      section: 'analytics',
      metric: 'recorded / preview p50',
      value: ratio.toFixed(3),
      target: '<= 1.10',
      ok: ratio <= 1.1,
    },
    {
      section: 'analytics',
      metric: 'shared bundle p99, recorded / preview',
      value: `${ms(percentile(recorded, 99))} / ${ms(percentile(preview, 99))}`,
    },
    {
      section: 'analytics',
      metric: 'GET /api/analytics p50 (7 days)',
      value: ms(percentile(reads, 50)),
    },
    {
      section: 'analytics',
      metric: 'injections counted / served',
      value: `${counted - injectedBefore} / ${served}`,
      target: 'equal',
      ok: counted - injectedBefore === served,
    },
  ];
}
