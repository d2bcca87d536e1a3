import type { Logger, Viewer } from '@ctxbus/core';
import { prepareItem } from '@ctxbus/core';
import type { Store } from '@ctxbus/store';
import { openSqliteStore } from '@ctxbus/store';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UsageRecorder } from './usage-recorder.js';

// The usage recorder on a real SQLite store, its clock turned by the test: uses become one
// write per flush, bucketed by UTC day; a failed write keeps its rows for the next; a store
// that cannot keep up makes it drop new uses past its bound instead of queueing them forever.

const code: Viewer = { teamId: 'acme', runtime: 'claude-code' };
const warnings: string[] = [];
const logger: Logger = {
  debug: () => {},
  info: () => {},
  warn: (_object, message) => warnings.push(message ?? ''),
  error: () => {},
};

let now: number;
let store: Store;
let recorder: UsageRecorder | null = null;
let ids: string[];

/** The store, with its usage writes counted, failing while `failing`, held while `gate` is set. */
function watched(inner: Store) {
  const state = { writes: 0, failing: false, gate: null as Promise<void> | null };
  const proxy = new Proxy(inner, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      if (property !== 'recordItemUsage') return value.bind(target);
      return async (...args: unknown[]) => {
        state.writes++;
        if (state.gate) await state.gate;
        if (state.failing) throw new Error('injected: the usage write failed');
        return value.apply(target, args);
      };
    },
  });
  return { store: proxy, state };
}

beforeEach(async () => {
  now = Date.parse('2026-11-02T23:59:00.000Z');
  warnings.length = 0;
  store = openSqliteStore({ path: ':memory:' });
  const outcomes = await store.writeItems(
    ['one', 'two', 'three'].map((title) =>
      prepareItem({ type: 'discovery', title }, code, { now: new Date(now) }),
    ),
  );
  ids = outcomes.map((outcome) => outcome.item.id);
});
afterEach(async () => {
  await recorder?.close();
  recorder = null;
  await store.close();
});

const window = { fromDay: '2026-11-01', toDay: '2026-11-05' };

describe('UsageRecorder', () => {
  it('writes every use of a flush in one store call, bucketed by UTC day', async () => {
    const { store: counted, state } = watched(store);
    recorder = new UsageRecorder(counted, () => new Date(now), logger, { flushIntervalMs: 0 });
    // A bundle of three items, served twice before midnight, and once after it.
    recorder.record(code, 'injected', [ids[0], ids[1], ids[2], ids[0]] as string[]);
    recorder.record(code, 'injected', ids);
    recorder.record(code, 'searched', [ids[1] as string]);
    now += 2 * 60_000;
    recorder.record(code, 'injected', ids);
    expect(recorder.pendingRows).toBe(6);
    await recorder.flush();
    expect(state.writes).toBe(1);
    expect(recorder.pendingRows).toBe(0);
    expect(await store.dailyUsage(code, window)).toEqual([
      { day: '2026-11-02', runtime: 'claude-code', injected: 6, consumed: 0, searched: 1 },
      { day: '2026-11-03', runtime: 'claude-code', injected: 3, consumed: 0, searched: 0 },
    ]);
    const [top] = await store.topUsedItems(code, { ...window, limit: 1 });
    expect(top).toMatchObject({
      injected: 3,
      searched: 1,
      lastUsedAt: new Date(now).toISOString(),
    });
    // Nothing waiting: a flush writes nothing.
    await recorder.flush();
    expect(state.writes).toBe(1);
  });

  it('keeps the rows of a failed write for the next flush', async () => {
    const { store: flaky, state } = watched(store);
    recorder = new UsageRecorder(flaky, () => new Date(now), logger, { flushIntervalMs: 0 });
    recorder.record(code, 'consumed', [ids[0] as string]);
    state.failing = true;
    await recorder.flush();
    expect(recorder.failures).toBe(1);
    expect(warnings).toContain('usage: recording failed');
    recorder.record(code, 'consumed', [ids[0] as string]);
    state.failing = false;
    await recorder.flush();
    expect(await store.runtimeUsage(code, window)).toEqual([
      { runtime: 'claude-code', items: 1, injected: 0, consumed: 2, searched: 0 },
    ]);
  });

  it('drops new uses past twice its bound while the store is behind, and says so', async () => {
    const { store: slow, state } = watched(store);
    let release = () => {};
    state.gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    recorder = new UsageRecorder(slow, () => new Date(now), logger, {
      flushIntervalMs: 0,
      maxPendingRows: 2,
    });
    // Two rows start a flush, which the store holds; the next two fill the buffer to its bound.
    recorder.record(code, 'injected', [ids[0], ids[1]] as string[]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(state.writes).toBe(1);
    recorder.record({ ...code, runtime: 'openclaw' }, 'injected', ids);
    recorder.record({ ...code, runtime: 'web' }, 'injected', ids);
    expect(recorder.pendingRows).toBe(4);
    expect(recorder.dropped).toBe(2);
    state.gate = null;
    release();
    await recorder.flush();
    expect(warnings).toContain('usage: the buffer was full; uses were dropped from the analytics');
    const runtimes = await store.runtimeUsage(code, window);
    expect(runtimes.map((row) => [row.runtime, row.injected])).toEqual([
      ['claude-code', 2],
      ['openclaw', 3],
      ['web', 1],
    ]);
  });
});
