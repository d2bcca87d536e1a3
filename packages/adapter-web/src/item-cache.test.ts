import type { ContextItem, StreamEvent } from '@ctxbus/core/contract';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ItemCache } from './item-cache.js';

let nextSeq = 0;

function item(title: string, extra: Partial<ContextItem> = {}): ContextItem {
  nextSeq += 1;
  return {
    id: `00000000-0000-7000-8000-${String(nextSeq).padStart(12, '0')}`,
    teamId: 'acme',
    type: 'discovery',
    title,
    content: '',
    summary: title,
    source: { runtime: 'claude-code', agentId: null, taskId: null, threadId: null },
    scope: 'global',
    scopeKey: null,
    relevanceTags: [],
    urgency: 'background',
    visibility: 'team',
    createdAt: '2026-01-01T00:00:00.000Z',
    expiresAt: null,
    supersedes: null,
    supersededBy: null,
    key: null,
    consumed: false,
    consumedBy: [],
    runtimeOptions: null,
    redactions: [],
    tokens: 1,
    seq: nextSeq,
    ...extra,
  } as ContextItem;
}

const added = (value: ContextItem): StreamEvent => ({
  seq: value.seq,
  event: 'context-added',
  item: value,
});

afterEach(() => {
  vi.useRealTimers();
});

describe('ItemCache', () => {
  it('keeps at most maxItems, dropping the oldest', () => {
    const cache = new ItemCache({ maxItems: 2 });
    const [a, b, c] = [item('a'), item('b'), item('c')];
    for (const value of [a, b, c]) cache.apply(added(value));
    expect(cache.snapshot().map((value) => value.title)).toEqual(['c', 'b']);
    expect(cache.lastSeq).toBe(c.seq);
  });

  it('ignores a change older than the one it holds, and a repeated one', () => {
    const cache = new ItemCache();
    const original = item('original');
    const consumedSeq = original.seq + 10;
    const consumed = { ...original, consumed: true, consumedBy: [] };
    cache.apply({ seq: consumedSeq, event: 'context-consumed', item: consumed });
    const listener = vi.fn();
    cache.subscribe(listener);
    expect(cache.apply(added(original))).toBe(false);
    expect(cache.apply({ seq: consumedSeq, event: 'context-consumed', item: consumed })).toBe(
      false,
    );
    expect(listener).not.toHaveBeenCalled();
    expect(cache.get(original.id)?.consumed).toBe(true);
  });

  it('hides expired items by its clock, and autoExpire drops them when they expire', () => {
    vi.useFakeTimers({ now: Date.parse('2026-01-01T00:00:00.000Z') });
    const cache = new ItemCache();
    const soon = item('soon', { expiresAt: '2026-01-01T00:01:00.000Z' });
    const later = item('later', { expiresAt: '2026-01-01T01:00:00.000Z' });
    cache.load([soon, later]);
    cache.autoExpire();
    const listener = vi.fn();
    cache.subscribe(listener);
    expect(cache.snapshot().map((value) => value.title)).toEqual(['later', 'soon']);
    vi.advanceTimersByTime(60_000);
    expect(listener).toHaveBeenCalledTimes(1);
    expect(cache.snapshot().map((value) => value.title)).toEqual(['later']);
    expect(cache.get(soon.id)).toBeUndefined();
    cache.stopAutoExpire();
    vi.advanceTimersByTime(3_600_000);
    expect(cache.size).toBe(1);
    expect(cache.items()).toEqual([]);
    expect(cache.expireDue()).toBe(true);
    expect(cache.size).toBe(0);
  });

  it('gives the same snapshot until something changes, and unsubscribes', () => {
    const cache = new ItemCache();
    const listener = vi.fn();
    const unsubscribe = cache.subscribe(listener);
    cache.apply(added(item('one')));
    const first = cache.snapshot();
    expect(cache.snapshot()).toBe(first);
    unsubscribe();
    cache.apply(added(item('two')));
    expect(listener).toHaveBeenCalledTimes(1);
    expect(cache.snapshot()).not.toBe(first);
  });
});

describe('ItemCache.merge and remove (rows without a change sequence)', () => {
  it('keeps the state further along: a stale listing cannot roll back a consumption or supersession', () => {
    const cache = new ItemCache();
    const fresh = item('merged');
    const consumed = {
      ...fresh,
      consumed: true,
      consumedBy: [{ runtime: 'web', at: '2026-01-01T00:01:00.000Z' }],
    };
    const superseded = { ...consumed, supersededBy: item('newer').id };
    expect(cache.merge([fresh])).toBe(true);
    expect(cache.merge([consumed])).toBe(true);
    expect(cache.merge([fresh])).toBe(false);
    expect(cache.get(fresh.id)?.consumedBy).toHaveLength(1);
    expect(cache.merge([superseded])).toBe(true);
    expect(cache.merge([consumed, fresh])).toBe(false);
    expect(cache.get(fresh.id)?.supersededBy).toBe(superseded.supersededBy);
    expect(cache.items()).toEqual([]);
  });

  it('remove drops items by id and tells listeners once', () => {
    const cache = new ItemCache();
    const kept = item('kept');
    const gone = item('gone');
    cache.merge([kept, gone]);
    let calls = 0;
    cache.subscribe(() => {
      calls += 1;
    });
    expect(cache.remove([gone.id, 'unknown'])).toBe(true);
    expect(cache.remove([gone.id])).toBe(false);
    expect(cache.items().map((entry) => entry.title)).toEqual(['kept']);
    expect(calls).toBe(1);
  });
});
