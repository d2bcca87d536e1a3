// The router's decision time (routeTask, pure, in process): 50 runtimes x 20 capabilities,
// random but seeded matrices, mixed presence and requests. Run through ./dev bench --only tasks.
import type { CapabilitiesFile, RouteRequest, RoutingKind, RuntimePresence } from '@ctxbus/core';
import { CAPABILITY_MODES, capabilitiesFileSchema, routeTask } from '@ctxbus/core';
import type { Row } from './stats.ts';
import { ms, percentile } from './stats.ts';

export const ROUTING_SHAPE = { runtimes: 50, capabilities: 20 } as const;

/** mulberry32: a small seeded generator, so every run routes the same cases. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

interface Case {
  request: RouteRequest;
  matrix: CapabilitiesFile;
  presence: RuntimePresence;
}

/** A matrix, its presence and requests against it, all from `seed`. */
export function routingCases(seed: number, requests: number): Case[] {
  const random = seeded(seed);
  const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)] as T;
  const some = <T>(values: readonly T[], most: number): T[] => {
    const count = Math.floor(random() * (most + 1));
    return [...new Set(Array.from({ length: count }, () => pick(values)))];
  };
  const runtimes = Array.from({ length: ROUTING_SHAPE.runtimes }, (_, index) => `rt-${index}`);
  const capabilities = Array.from(
    { length: ROUTING_SHAPE.capabilities },
    (_, index) => `cap_${index}`,
  );
  const matrix = capabilitiesFileSchema.parse({
    version: 1,
    runtimes: Object.fromEntries(
      runtimes.map((runtime) => [
        runtime,
        {
          description: runtime,
          trust: pick(['trusted', 'standard', 'standard', 'restricted']),
          capabilities: Object.fromEntries(
            capabilities.flatMap((capability) => {
              if (random() < 0.2) return []; // absent: unavailable
              const mode = pick(CAPABILITY_MODES);
              return [
                [
                  capability,
                  {
                    mode,
                    via: `${capability}-tool`,
                    ...((mode === 'via-api' || mode === 'via-mcp') &&
                      random() < 0.5 && { target: pick(runtimes) }),
                    ...(random() < 0.3 && {
                      limits: { network: random() < 0.5, seconds: 1 + Math.floor(random() * 300) },
                    }),
                  },
                ],
              ];
            }),
          ),
        },
      ]),
    ),
  });
  const presence: RuntimePresence = Object.fromEntries(
    runtimes.flatMap((runtime) =>
      random() < 0.1
        ? [] // never seen: offline
        : [[runtime, { online: random() < 0.7, workers: Math.floor(random() * 5) }]],
    ),
  );
  return Array.from({ length: requests }, () => ({
    matrix,
    presence,
    request: {
      requiredCapabilities: [pick(capabilities), ...some(capabilities, 3)],
      origin: random() < 0.05 ? 'undeclared' : pick(runtimes),
      preferences: {
        prefer: some(runtimes, 3),
        avoid: some(runtimes, 3),
        allowQueue: random() < 0.8,
      },
      constraints: {
        ...(random() < 0.3 && { network: true }),
        ...(random() < 0.3 && { seconds: 1 + Math.floor(random() * 300) }),
      },
    },
  }));
}

/** routeTask p50/p99 over `decisions` decisions on 10 seeded matrices, after a warm-up. */
export function benchRouting(decisions: number, log: (line: string) => void): Row[] {
  const { runtimes, capabilities } = ROUTING_SHAPE;
  const shape = `${runtimes} runtimes x ${capabilities} capabilities`;
  log(`tasks: routeTask, ${decisions.toLocaleString('en-US')} decisions, ${shape}`);
  const matrices = 10;
  const cases = Array.from({ length: matrices }, (_, index) =>
    routingCases(1_000 + index, Math.ceil(decisions / matrices)),
  ).flat();
  for (const { request, matrix, presence } of cases.slice(0, 1_000)) {
    routeTask(request, matrix, presence);
  }
  const latencies: number[] = [];
  const kinds = new Map<RoutingKind, number>();
  for (const { request, matrix, presence } of cases) {
    const start = performance.now();
    const decision = routeTask(request, matrix, presence);
    latencies.push(performance.now() - start);
    kinds.set(decision.kind, (kinds.get(decision.kind) ?? 0) + 1);
  }
  const p99 = percentile(latencies, 99);
  const mix = [...kinds.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([kind, count]) => `${kind} ${count}`)
    .join(', ');
  return [
    {
      section: 'tasks',
      metric: `routing decision p50 (${shape})`,
      value: ms(percentile(latencies, 50)),
    },
    {
      section: 'tasks',
      metric: `routing decision p99 (${shape})`,
      value: ms(p99),
      target: '<= 1 ms',
      ok: p99 <= 1,
    },
    {
      section: 'tasks',
      metric: `routing decisions made (${mix})`,
      value: `${cases.length} decisions`,
    },
  ];
}
