import type { ContextItemInput, Viewer } from '@ctxbus/core';
import { CtxbusError, prepareItem } from '@ctxbus/core';
import { describe, expect, it } from 'vitest';
import type { PlannedInput } from './write-plan.js';
import { rowsToLoad, WritePlan } from './write-plan.js';

// The plan alone, without a database (the conformance suite checks it through both stores).

const acme: Viewer = { teamId: 'acme', runtime: 'claude-code' };
const now = new Date('2026-11-21T12:00:00.000Z');
const input = (fields: Partial<ContextItemInput>, viewer: Viewer = acme): PlannedInput => ({
  item: prepareItem({ type: 'decision', title: 'untitled', ...fields }, viewer, { now }),
});

function codeOf(work: () => unknown): string | undefined {
  try {
    work();
  } catch (error) {
    return CtxbusError.isInstance(error) ? error.code : 'not a CtxbusError';
  }
  return undefined;
}

describe('WritePlan', () => {
  it('numbers changes, supersedes by key, and hands over what to persist', () => {
    const plan = new WritePlan<PlannedInput>(10, []);
    const [first] = plan.write([input({ title: 'v1', key: 'db' })], now.getTime());
    const [second] = plan.write([input({ title: 'v2', key: 'db' })], now.getTime());
    expect(first?.item.seq).toBe(11);
    expect(second?.item).toMatchObject({ seq: 12, supersedes: first?.item.id });
    expect(first?.item.supersededBy).toBeNull();
    const planned = plan.planned();
    expect(planned.changes.map((change) => [change.seq, change.kind])).toEqual([
      [11, 'added'],
      [12, 'added'],
      [13, 'superseded'],
    ]);
    expect(planned.created.map(({ item }) => item.supersededBy)).toEqual([second?.item.id, null]);
    expect(planned.updated).toEqual([]);
    expect(planned.seq).toBe(13);
  });

  it('fails a write whole: a refused item undoes the ones before it', () => {
    const plan = new WritePlan<PlannedInput>(0, []);
    const missing = '0192f000-0000-7000-8000-00000000dead';
    const code = codeOf(() =>
      plan.write([input({ title: 'ok' }), input({ supersedes: missing })], now.getTime()),
    );
    expect(code).toBe('invalid_reference');
    expect(plan.currentSeq).toBe(0);
    expect(plan.hasPending).toBe(false);
  });

  it('updates loaded rows, and records a consumption once per runtime', () => {
    const [loaded] = new WritePlan<PlannedInput>(0, []).write([input({})], now.getTime());
    if (!loaded) throw new Error('no outcome');
    const plan = new WritePlan<PlannedInput>(5, [{ item: loaded.item, inputHash: 'h' }]);
    expect(plan.consume(acme, loaded.item.id, now.getTime())?.consumed).toBe(true);
    expect(plan.consume(acme, loaded.item.id, now.getTime())?.consumedBy).toHaveLength(1);
    expect(plan.consume({ teamId: 'globex', runtime: 'x' }, loaded.item.id, 0)).toBeNull();
    const planned = plan.planned();
    expect(planned.updated.map((item) => item.id)).toEqual([loaded.item.id]);
    expect(planned.changes.map((change) => [change.seq, change.kind])).toEqual([[6, 'consumed']]);
    plan.markPersisted();
    expect(plan.hasPending).toBe(false);
  });

  it('says which rows it needs', () => {
    const { item } = input({ key: 'db', supersedes: '0192f000-0000-7000-8000-000000000001' });
    expect(rowsToLoad([item])).toEqual({
      ids: [
        { teamId: 'acme', id: item.id },
        { teamId: 'acme', id: '0192f000-0000-7000-8000-000000000001' },
      ],
      keys: [{ teamId: 'acme', key: 'db', runtime: 'claude-code' }],
    });
  });
});

describe('WritePlan: what a write replaced', () => {
  it('reports the replaced item as it was, and whether the key or `supersedes` chose it', () => {
    const plan = new WritePlan<PlannedInput>(0, []);
    const claw: Viewer = { teamId: 'acme', runtime: 'openclaw' };
    const [first] = plan.write([input({ title: 'v1', key: 'db' })], now.getTime());
    const [second] = plan.write([input({ title: 'v2', key: 'db' }, claw)], now.getTime());
    const [third] = plan.write(
      [input({ title: 'v3', key: 'db', supersedes: second?.item.id })],
      now.getTime(),
    );
    expect(first?.superseded).toBeUndefined();
    expect(second?.superseded).toMatchObject({ via: 'key', item: { id: first?.item.id } });
    expect(second?.superseded?.item.supersededBy).toBe(second?.item.id);
    expect(second?.superseded?.item.source.runtime).toBe('claude-code');
    expect(third?.superseded).toMatchObject({ via: 'supersedes', item: { id: second?.item.id } });
  });
});
