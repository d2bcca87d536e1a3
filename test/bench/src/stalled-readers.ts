// Stalled readers: hub memory and the other readers' delivery latency while some SSE
// subscribers never read. Each phase is a fresh `ctxbus serve`: the same readers and writes,
// once with no stalled subscriber and once with them, so that the latency of the readers can
// be compared within one run.
import type { Socket } from 'node:net';
import { connect } from 'node:net';
import type { HubProcess } from '@ctxbus/test-kit';
import {
  call,
  removeDir,
  runtimeToken,
  startHubProcess,
  tempDir,
  waitUntil,
} from '@ctxbus/test-kit';
import { openRawEventStream, RawHttpClient } from './raw-http.ts';
import type { Row } from './stats.ts';
import { ms, percentile, rssMb } from './stats.ts';

export interface StalledSize {
  readers: number;
  stalled: number;
  items: number;
  /** Writes per second (paced: a steady stream, not a burst). */
  pace: number;
  /** Readers whose every event is timed and checked for order (the rest only count bytes). */
  timed: number;
}

export const STALLED_FULL: StalledSize = {
  readers: 900,
  stalled: 100,
  items: 10_000,
  pace: 250,
  timed: 100,
};
/** A smoke run (the bench's test): the same 1,000 items, written twice as fast, to fewer readers. */
export const STALLED_QUICK: StalledSize = {
  readers: 30,
  stalled: 10,
  items: 1_000,
  pace: 500,
  timed: 30,
};

const CONTENT = 'x'.repeat(2_000);
const TARGET_MB = 400;

interface PhaseResult {
  peakRssMb: number;
  endRssMb: number;
  latencies: number[];
  /** Timed readers that saw every item once, in order. */
  complete: number;
  slowReadersEnded: number;
  stalled: number;
}

/** A subscriber that sends its request and then never reads: the hub sees TCP backpressure. */
function openStalled(url: string, token: string): Socket {
  const target = new URL(url);
  const socket = connect(Number(target.port), target.hostname);
  socket.once('connect', () => {
    socket.write(
      `GET /api/stream?tags=stalled HTTP/1.1\r\nHost: ${target.host}\r\nAuthorization: Bearer ${token}\r\nAccept: text/event-stream\r\n\r\n`,
    );
    socket.pause();
  });
  socket.on('error', () => {});
  return socket;
}

async function phase(
  size: StalledSize,
  stalledCount: number,
  log: (line: string) => void,
): Promise<PhaseResult> {
  const dataDir = tempDir('ctxbus-bench-stalled-');
  const hub: HubProcess = await startHubProcess({
    dataDir,
    // Every reader uses one token here: room for all of them.
    args: [
      '--log-level',
      'error',
      '--max-streams-per-token',
      '5000',
      '--max-streams-per-team',
      '5000',
    ],
    env: { CTXBUS_VALIDATE_RESPONSES: '0' },
  });
  const pid = hub.process.pid ?? 0;
  let peak = 0;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssMb(pid));
  }, 50);
  const stalledSockets: Socket[] = [];
  const streams: { close(): void }[] = [];
  try {
    const token = await runtimeToken(hub, 'bench', 'claude-code');
    const sentAt = new Float64Array(size.items);
    const latencies: number[] = [];
    const seen: number[][] = [];
    const done: Promise<void>[] = [];
    for (let reader = 0; reader < size.readers; reader++) {
      const timed = reader < size.timed;
      const indexes: number[] = [];
      if (timed) seen.push(indexes);
      let resolveDone: () => void = () => {};
      done.push(
        new Promise((resolve) => {
          resolveDone = resolve;
        }),
      );
      let count = 0;
      const stream = openRawEventStream(hub.url, '/api/stream?tags=stalled', token, (event, at) => {
        count += 1;
        if (timed) {
          const match = /"title":"stalled (\d+)"/.exec(event);
          const index = Number(match?.[1]);
          indexes.push(index);
          latencies.push(at - (sentAt[index] ?? at));
        }
        if (count === size.items) resolveDone();
      });
      streams.push(stream);
      await stream.ready;
    }
    for (let index = 0; index < stalledCount; index++) {
      stalledSockets.push(openStalled(hub.url, token));
    }
    // Every stalled subscriber is open (and subscribed) before the first write.
    const admin = hub.adminToken;
    await waitUntil(async () => {
      const stats = await call(hub.url, 'GET', '/api/admin/streams', { token: admin });
      return stats.body.open >= size.readers + stalledCount;
    }, 'every subscriber to be open');
    log(
      `stalled: ${size.readers} readers, ${stalledCount} stalled, ${size.items} items of 2 KB at ${size.pace}/s`,
    );
    const writer = new RawHttpClient(hub.url, token);
    const start = performance.now();
    const interval = 1000 / size.pace;
    // One writer, one request at a time, each at its slot (or at once when running late).
    for (let index = 0; index < size.items; index++) {
      const wait = start + index * interval - performance.now();
      if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
      sentAt[index] = performance.now();
      const response = await writer.post('/api/context', {
        type: 'status',
        title: `stalled ${index}`,
        content: CONTENT,
        relevanceTags: ['stalled'],
      });
      if (response.status !== 201) throw new Error(`write ${index}: ${response.status}`);
    }
    await Promise.all(done);
    writer.close();
    const stats = await call(hub.url, 'GET', '/api/admin/streams', { token: admin });
    const complete = seen.filter(
      (indexes) =>
        indexes.length === size.items && indexes.every((value, position) => value === position),
    ).length;
    return {
      peakRssMb: Math.max(peak, rssMb(pid)),
      endRssMb: rssMb(pid),
      latencies,
      complete,
      slowReadersEnded: stats.body.ended.slow_reader as number,
      stalled: stalledCount,
    };
  } finally {
    clearInterval(sampler);
    for (const stream of streams) stream.close();
    for (const socket of stalledSockets) socket.destroy();
    await hub.stop();
    removeDir(dataDir);
  }
}

/**
 * Hub RSS with `readers + stalled` SSE subscribers while `items` items of 2 KB are written,
 * and the readers' delivery p50/p99 with and without the stalled ones (target: RSS <= 400 MB,
 * p99 unchanged within noise). Returns rows, plus whether every timed reader got every item.
 */
export async function benchStalled(
  size: StalledSize,
  log: (line: string) => void,
): Promise<{ rows: Row[]; everyReaderComplete: boolean }> {
  const without = await phase(size, 0, log);
  const withStalled = await phase(size, size.stalled, log);
  const rows: Row[] = [];
  const label = `${size.readers} readers`;
  for (const [name, result] of [
    ['no stalled', without],
    [`${size.stalled} stalled`, withStalled],
  ] as const) {
    rows.push({
      section: 'stalled',
      metric: `hub RSS peak / end, ${label}, ${name}`,
      value: `${result.peakRssMb.toFixed(0)} / ${result.endRssMb.toFixed(0)} MB`,
      ...(result.stalled > 0 && {
        target: `<= ${TARGET_MB} MB`,
        ok: result.peakRssMb <= TARGET_MB,
      }),
    });
    rows.push({
      section: 'stalled',
      metric: `write -> SSE p50 / p99, ${size.timed} of the ${label}, ${name}`,
      value: `${ms(percentile(result.latencies, 50))} / ${ms(percentile(result.latencies, 99))}`,
    });
  }
  rows.push({
    section: 'stalled',
    metric: 'p99 with stalled / without',
    value: `${(percentile(withStalled.latencies, 99) / percentile(without.latencies, 99)).toFixed(2)}x`,
  });
  rows.push({
    section: 'stalled',
    metric: 'stalled subscribers the hub ended (slow_reader)',
    value: `${withStalled.slowReadersEnded} of ${size.stalled}`,
  });
  const everyReaderComplete =
    without.complete === Math.min(size.timed, size.readers) &&
    withStalled.complete === Math.min(size.timed, size.readers);
  rows.push({
    section: 'stalled',
    metric: 'timed readers that got every item once, in order',
    value: `${without.complete} and ${withStalled.complete} of ${size.timed}`,
    target: 'all',
    ok: everyReaderComplete,
  });
  return { rows, everyReaderComplete };
}
