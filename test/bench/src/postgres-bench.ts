// The PostgreSQL benchmarks: two real `ctxbus serve --store postgres://...` hubs on one fresh
// schema. Write throughput through hub A; write -> SSE delivery to subscribers on both hubs; and,
// in the same run, the raw LISTEN/NOTIFY round trip with as many plain `pg` listeners as there
// are subscribers: the physical floor the delivery latency is compared with.

import { randomBytes } from 'node:crypto';
import type { ServerProbe } from '@ctxbus/store/testing';
import { ScratchSchemas } from '@ctxbus/store/testing';
import type { HubProcess } from '@ctxbus/test-kit';
import { call, runtimeToken, startHubProcess } from '@ctxbus/test-kit';
import { storeUrl } from '@ctxbus/test-kit/postgres';
import pg from 'pg';
import { openRawEventStream, RawHttpClient } from './raw-http.ts';
import type { Row } from './stats.ts';
import { ms, percentile, perSecond } from './stats.ts';

const SECTION = 'postgres';

export interface PostgresBenchOptions {
  quick: boolean;
  log: (line: string) => void;
}

interface Sizes {
  singleWrites: number;
  clients: number;
  perClient: number;
  batchSize: number;
  batchesPerClient: number;
  subscribers: number;
  deliveryWrites: number;
  paceMs: number;
}

function sizes(quick: boolean): Sizes {
  return {
    singleWrites: quick ? 100 : 1_000,
    clients: 16,
    perClient: quick ? 20 : 200,
    batchSize: 50,
    batchesPerClient: quick ? 3 : 40,
    // The floor opens as many LISTEN connections: a full run fills a default server's 100 (it
    // measures with what the server grants); a quick run (the bench's own test, beside other
    // suites' hubs and pools on the same server) leaves room for them.
    subscribers: quick ? 20 : 100,
    deliveryWrites: quick ? 50 : 2_000,
    paceMs: 20,
  };
}

/** Why the section cannot run: no server answers. */
export function skipReason(probe: Extract<ServerProbe, { url: null }>): string {
  return `no PostgreSQL at ${probe.tried} (${probe.reason}); set CTXBUS_TEST_POSTGRES_URL`;
}

const sleepUntil = (at: number) =>
  new Promise((resolve) => setTimeout(resolve, Math.max(0, at - performance.now())));

async function post(hub: HubProcess, token: string, body: unknown): Promise<void> {
  const response = await call(hub.url, 'POST', '/api/context', { token, body });
  if (response.status !== 201 && response.status !== 200) {
    throw new Error(`write failed: ${response.status} ${JSON.stringify(response.body)}`);
  }
}

async function benchThroughput(hub: HubProcess, token: string, size: Sizes): Promise<Row[]> {
  const rows: Row[] = [];
  const content = 'x'.repeat(200);
  let started = performance.now();
  for (let index = 0; index < size.singleWrites; index++) {
    await post(hub, token, { type: 'status', title: `pg single ${index}`, content });
  }
  rows.push({
    section: SECTION,
    metric: 'throughput, 1 client, single items',
    value: perSecond(size.singleWrites, performance.now() - started),
  });

  started = performance.now();
  await Promise.all(
    Array.from({ length: size.clients }, async (_, client) => {
      for (let index = 0; index < size.perClient; index++) {
        await post(hub, token, { type: 'status', title: `pg c${client} ${index}`, content });
      }
    }),
  );
  rows.push({
    section: SECTION,
    metric: `throughput, ${size.clients} clients, single items`,
    value: perSecond(size.clients * size.perClient, performance.now() - started),
  });

  started = performance.now();
  await Promise.all(
    Array.from({ length: size.clients }, async (_, client) => {
      for (let batch = 0; batch < size.batchesPerClient; batch++) {
        const items = Array.from({ length: size.batchSize }, (_, index) => ({
          type: 'discovery',
          title: `pg c${client} batch ${batch} item ${index}`,
          content,
        }));
        await post(hub, token, { items });
      }
    }),
  );
  const batchedItems = size.clients * size.batchesPerClient * size.batchSize;
  const rate = (batchedItems / (performance.now() - started)) * 1000;
  rows.push({
    section: SECTION,
    metric: `throughput, ${size.clients} clients, batches of ${size.batchSize}`,
    value: perSecond(batchedItems, performance.now() - started),
    target: '>= 5,000 items/s',
    ok: rate >= 5_000,
  });
  return rows;
}

interface Delivery {
  /** Every latency (ms) from write start to event received, per hub. */
  sameHub: number[];
  crossHub: number[];
  /** Write start -> the hub's 201 (the commit included). */
  writes: number[];
  missing: number;
}

/**
 * `subscribers` SSE streams, half on hub A and half on hub B; paced writes on hub A. Hub B's
 * subscribers learn of each write only through PostgreSQL (NOTIFY, then a read of the change log).
 * The writer and the subscribers speak HTTP/1.1 straight on sockets (raw-http.ts), as lean as the
 * floor's pg clients; a subscriber's time is taken when the bytes arrive, before any parsing.
 */
async function benchDelivery(
  a: HubProcess,
  b: HubProcess,
  writer: string,
  reader: string,
  size: Sizes,
): Promise<Delivery> {
  const tag = `pgbench-${randomBytes(3).toString('hex')}`;
  const sentAt = new Map<string, number>();
  const result: Delivery = { sameHub: [], crossHub: [], writes: [], missing: 0 };
  const received = Array.from({ length: size.subscribers }, () => 0);
  const streams = Array.from({ length: size.subscribers }, (_, index) => {
    const onA = index % 2 === 0;
    return openRawEventStream((onA ? a : b).url, `/api/stream?tags=${tag}`, reader, (event, at) => {
      if (!event.startsWith('event: context-added')) return;
      const title = TITLE.exec(event)?.[1];
      const start = title === undefined ? undefined : sentAt.get(title);
      if (start === undefined) return;
      (onA ? result.sameHub : result.crossHub).push(at - start);
      received[index] = (received[index] ?? 0) + 1;
    });
  });
  const client = new RawHttpClient(a.url, writer);
  try {
    await Promise.all(streams.map((stream) => stream.ready));
    const writes: Promise<void>[] = [];
    const origin = performance.now() + 50;
    for (let index = 0; index < size.deliveryWrites; index++) {
      await sleepUntil(origin + index * size.paceMs);
      const title = `pg delivery ${index}`;
      const start = performance.now();
      sentAt.set(title, start);
      writes.push(
        client
          .post('/api/context', { type: 'status', title, relevanceTags: [tag] })
          .then((response) => {
            if (response.status !== 201)
              throw new Error(`write failed: ${response.status} ${response.body}`);
            result.writes.push(performance.now() - start);
          }),
      );
    }
    await Promise.all(writes);
    const deadline = Date.now() + 10_000;
    while (received.some((count) => count < size.deliveryWrites) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } finally {
    client.close();
    for (const stream of streams) stream.close();
  }
  result.missing = size.deliveryWrites * size.subscribers - received.reduce((x, y) => x + y, 0);
  return result;
}

const TITLE = /"title":"(pg delivery \d+)"/;

interface RawNotify {
  listeners: number;
  latencies: number[];
  missing: number;
}

/**
 * The floor: `wanted` plain LISTEN connections on one channel and a separate connection sending
 * `pg_notify` at the delivery's pace; latency from just before the send to each notification.
 * Fewer listeners when the server refuses more connections (max_connections): the row says how
 * many.
 */
async function benchRawNotify(
  url: string,
  wanted: number,
  size: Sizes,
  /** With a table: each notification is sent by a durable transaction inserting a row there. */
  commitTable?: string,
): Promise<RawNotify> {
  const channel = `ctxbus_bench_${randomBytes(4).toString('hex')}`;
  const sentAt = new Map<string, number>();
  const latencies: number[] = [];
  const listeners: pg.Client[] = [];
  const received: number[] = [];
  const sender = new pg.Client({ connectionString: url, application_name: 'ctxbus-bench-notify' });
  try {
    await sender.connect();
    for (let index = 0; index < wanted; index++) {
      const client = new pg.Client({
        connectionString: url,
        application_name: 'ctxbus-bench-listen',
      });
      client.on('error', () => {});
      try {
        await client.connect();
      } catch (error) {
        // 53300: too many connections. Measure with the listeners we have.
        if ((error as { code?: string }).code === '53300' && listeners.length > 0) break;
        throw error;
      }
      const slot = listeners.length;
      listeners.push(client);
      received.push(0);
      client.on('notification', (message) => {
        const now = performance.now();
        const start = sentAt.get(message.payload ?? '');
        if (start === undefined) return;
        latencies.push(now - start);
        received[slot] = (received[slot] ?? 0) + 1;
      });
      await client.query(`LISTEN "${channel}"`);
    }
    const sends: Promise<unknown>[] = [];
    const origin = performance.now() + 50;
    for (let index = 0; index < size.deliveryWrites; index++) {
      await sleepUntil(origin + index * size.paceMs);
      const payload = String(index);
      sentAt.set(payload, performance.now());
      sends.push(
        commitTable === undefined
          ? sender.query('SELECT pg_notify($1, $2)', [channel, payload])
          : sender.query(
              `BEGIN; INSERT INTO ${commitTable} (payload) VALUES ('${payload}');
               SELECT pg_notify('${channel}', '${payload}'); COMMIT`,
            ),
      );
    }
    await Promise.all(sends);
    const deadline = Date.now() + 10_000;
    while (received.some((count) => count < size.deliveryWrites) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } finally {
    await Promise.all([sender, ...listeners].map((client) => client.end().catch(() => {})));
  }
  const missing = size.deliveryWrites * listeners.length - latencies.length;
  return { listeners: listeners.length, latencies, missing };
}

/**
 * After the throughput run's burst (tens of thousands of rows), the steady state the delivery
 * run should see: the tables vacuumed and analysed (as the store's own maintenance and
 * autovacuum would soon do), and no autovacuum worker still busy, at most 30 s. Otherwise that
 * background work lands in the delivery figures and not in the floor's, measured on a quiet
 * server.
 */
async function settle(url: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`VACUUM (ANALYZE) "${schema}".items, "${schema}".changes`);
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      const { rows } = await client.query<{ busy: number }>(
        `SELECT count(*)::int AS busy FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'`,
      );
      if ((rows[0]?.busy ?? 0) === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  } finally {
    await client.end();
  }
}

/** Runs the section against the server at `url` on scratch schemas, dropped at the end. */
export async function benchPostgres(url: string, options: PostgresBenchOptions): Promise<Row[]> {
  const schemas = new ScratchSchemas(url);
  try {
    return await runPostgresBench(url, options, schemas);
  } finally {
    await schemas.dropAll();
  }
}

async function runPostgresBench(
  url: string,
  options: PostgresBenchOptions,
  schemas: ScratchSchemas,
): Promise<Row[]> {
  const size = sizes(options.quick);
  const rows: Row[] = [];
  const row = (metric: string, value: string, target?: string, ok?: boolean) =>
    rows.push({
      section: SECTION,
      metric,
      value,
      ...(target && { target }),
      ...(ok !== undefined && { ok }),
    });

  // The floor is measured while no hub holds connections (100 listeners is the server's
  // default max_connections; the hubs' pools would not leave room), half of it before the
  // hubs start and half after they stop, so that load drifting on a shared machine weighs on
  // both sides of the ratio alike.
  const floorSize = { ...size, deliveryWrites: Math.ceil(size.deliveryWrites / 2) };
  const schema = schemas.next('bench');
  // A second floor: NOTIFY sent by a durable one-row insert (fsync on commit), as a write's is.
  const floorSchema = schemas.next('floor');
  const commitTable = `"${floorSchema}".floor_writes`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(
    `CREATE SCHEMA "${floorSchema}"; CREATE TABLE ${commitTable} (id serial PRIMARY KEY, payload text NOT NULL)`,
  );
  await admin.end();
  options.log(`postgres: raw LISTEN/NOTIFY, ${size.subscribers} listeners (first half)`);
  const before = await benchRawNotify(url, size.subscribers, floorSize);
  const commitBefore = await benchRawNotify(url, size.subscribers, floorSize, commitTable);
  let delivery: Delivery | null = null;

  const hubs: HubProcess[] = [];
  try {
    const store = storeUrl(url, schema);
    const hubOptions = {
      store,
      args: ['--log-level', 'error'],
      env: {
        CTXBUS_VALIDATE_RESPONSES: '0',
        ...(process.env.CTXBUS_BENCH_HUB_NODE_OPTIONS && {
          NODE_OPTIONS: process.env.CTXBUS_BENCH_HUB_NODE_OPTIONS,
        }),
      },
    };
    // Sequential: the first migrates the fresh schema and mints the admin token.
    options.log(`postgres: two hubs on schema ${schema}`);
    const a = await startHubProcess(hubOptions);
    hubs.push(a);
    const b = await startHubProcess(hubOptions);
    hubs.push(b);
    const writer = await runtimeToken(a, 'bench', 'claude-code');
    const reader = await runtimeToken(a, 'bench', 'openclaw');

    options.log('postgres: write throughput via hub A');
    rows.push(...(await benchThroughput(a, writer, size)));
    options.log('postgres: letting the database settle after the write burst');
    await settle(url, schema);

    options.log(
      `postgres: delivery, ${size.subscribers} SSE subscribers (half on each hub), writes on hub A`,
    );
    delivery = await benchDelivery(a, b, writer, reader, size);
  } finally {
    for (const hub of hubs) await hub.stop();
  }
  options.log(`postgres: raw LISTEN/NOTIFY, ${size.subscribers} listeners (second half)`);
  const after = await benchRawNotify(url, size.subscribers, floorSize);
  const commitAfter = await benchRawNotify(url, size.subscribers, floorSize, commitTable);
  const raw: RawNotify = {
    listeners: Math.min(before.listeners, after.listeners),
    latencies: [...before.latencies, ...after.latencies],
    missing: before.missing + after.missing,
  };
  if (delivery === null) throw new Error('postgres: the delivery run did not finish');
  const all = [...delivery.sameHub, ...delivery.crossHub];
  const label = `${size.subscribers} subscribers on 2 hubs`;
  const half = size.subscribers / 2;
  row(`write -> SSE p50, ${label}`, ms(percentile(all, 50)));
  row(`write -> SSE p99, ${label}`, ms(percentile(all, 99)));
  row(`write -> SSE p50, ${half} on the writing hub`, ms(percentile(delivery.sameHub, 50)));
  row(`write -> SSE p99, ${half} on the writing hub`, ms(percentile(delivery.sameHub, 99)));
  row(`write -> SSE p50, ${half} on the other hub`, ms(percentile(delivery.crossHub, 50)));
  row(`write -> SSE p99, ${half} on the other hub`, ms(percentile(delivery.crossHub, 99)));
  row(
    'write p50 during delivery (POST -> 201, commit included)',
    ms(percentile(delivery.writes, 50)),
  );
  row(
    'write p99 during delivery (POST -> 201, commit included)',
    ms(percentile(delivery.writes, 99)),
  );
  if (delivery.missing > 0) {
    row(`events not delivered, ${label}`, String(delivery.missing), '0', false);
  }

  const rawLabel = `${raw.listeners} listeners`;
  const rawP99 = percentile(raw.latencies, 99);
  row(`raw NOTIFY p50, ${rawLabel}`, ms(percentile(raw.latencies, 50)));
  row(`raw NOTIFY p99, ${rawLabel}`, ms(rawP99));
  if (raw.missing > 0) row(`notifications not received, ${rawLabel}`, String(raw.missing));
  const ratio = percentile(all, 99) / rawP99;
  row(
    `delivery p99 / raw NOTIFY p99 (${label} / ${rawLabel})`,
    `${ratio.toFixed(2)}x`,
    '<= 2.0x',
    ratio <= 2,
  );
  row(
    `delivery p99 / raw NOTIFY p99 (${half} on the other hub / ${rawLabel})`,
    `${(percentile(delivery.crossHub, 99) / rawP99).toFixed(2)}x`,
  );
  const committed = [...commitBefore.latencies, ...commitAfter.latencies];
  const committedP99 = percentile(committed, 99);
  row(`raw insert + NOTIFY transaction p50, ${rawLabel}`, ms(percentile(committed, 50)));
  row(`raw insert + NOTIFY transaction p99, ${rawLabel}`, ms(committedP99));
  row(
    `delivery p99 / raw insert + NOTIFY p99 (${label} / ${rawLabel})`,
    `${(percentile(all, 99) / committedP99).toFixed(2)}x`,
  );
  return rows;
}
