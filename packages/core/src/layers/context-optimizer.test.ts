import { describe, expect, it } from 'vitest';
import type { LayerEntry } from './context-optimizer.js';
import {
  ContextOptimizer,
  compactValue,
  SUMMARY_ENTRY,
  SUMMARY_NAMES,
} from './context-optimizer.js';
import { createRunContext, jsonBytes } from './run-context.js';

function ticking(): () => Date {
  let at = Date.parse('2026-01-01T00:00:00.000Z');
  return () => {
    at += 1000;
    return new Date(at);
  };
}

const entries = (count: number, size = 10): LayerEntry[] =>
  Array.from({ length: count }, (_, index) => ({
    name: `e${index}`,
    value: 'v'.repeat(size),
  }));

describe('compactValue', () => {
  it('cuts strings, arrays and nesting until the value fits, marking each cut', () => {
    const value = {
      text: 'a'.repeat(5000),
      list: Array.from({ length: 500 }, (_, index) => index),
      deep: { a: { b: { c: { d: { e: { f: { g: { h: { i: 'bottom' } } } } } } } } },
    };
    const compacted = compactValue(value, 600);
    expect(compacted).not.toBeNull();
    expect(jsonBytes(compacted)).toBeLessThanOrEqual(600);
    expect(JSON.stringify(compacted)).toContain('…');
    expect(compactValue('short', 100)).toBe('short');
    expect(compactValue('x'.repeat(100), 5)).toBeNull();
    // Deterministic: the same input gives the same output.
    expect(compactValue(value, 600)).toEqual(compacted);
  });
});

describe('ContextOptimizer.optimizeEntries', () => {
  it('compress: an oversize value is compacted in place', () => {
    const result = new ContextOptimizer({ techniques: ['compress'] }).optimizeEntries(
      [{ name: 'big', value: 'x'.repeat(1000) }],
      { maxValueBytes: 100 },
    );
    expect(result.withinBounds).toBe(true);
    expect(jsonBytes(result.entries[0]?.value)).toBeLessThanOrEqual(100);
    expect(result.actions).toEqual([
      { technique: 'compress', name: 'big', fromBytes: 1002, toBytes: expect.any(Number) },
    ]);
  });

  it('reference: an oversize value is replaced by a reference, the original handed back', () => {
    const original = { rows: 'r'.repeat(500) };
    const result = new ContextOptimizer({
      techniques: ['reference'],
      referencePrefix: 'runs/r1/',
    }).optimizeEntries([{ name: 'table', value: original }], { maxValueBytes: 100 });
    expect(result.entries).toEqual([
      { name: 'table', value: { $ref: 'runs/r1/table', bytes: jsonBytes(original) } },
    ]);
    expect(result.referenced).toEqual([{ name: 'table', value: original, ref: 'runs/r1/table' }]);
    expect(result.withinBounds).toBe(true);
  });

  it('archive: the oldest entries leave until count and bytes are within bounds', () => {
    const optimizer = new ContextOptimizer({ techniques: ['archive'] });
    const byCount = optimizer.optimizeEntries(entries(5), { maxEntries: 3 });
    expect(byCount.entries.map((entry) => entry.name)).toEqual(['e2', 'e3', 'e4']);
    expect(byCount.archived.map((entry) => entry.name)).toEqual(['e0', 'e1']);
    const byBytes = optimizer.optimizeEntries(entries(5), { maxBytes: 30 });
    expect(byBytes.entries.map((entry) => entry.name)).toEqual(['e3', 'e4']);
    expect(byBytes.withinBounds).toBe(true);
    // A value no other technique can fit leaves whole.
    const tooBig = optimizer.optimizeEntries([{ name: 'x', value: 'x'.repeat(50) }], {
      maxValueBytes: 10,
    });
    expect(tooBig.archived).toEqual([{ name: 'x', value: 'x'.repeat(50) }]);
    expect(tooBig.entries).toEqual([]);
  });

  it('summarize: folded entries are named in one summary entry, kept across runs', () => {
    const optimizer = new ContextOptimizer({ techniques: ['summarize', 'archive'] });
    const first = optimizer.optimizeEntries(entries(6), { maxEntries: 4 });
    expect(first.entries.map((entry) => entry.name)).toEqual([SUMMARY_ENTRY, 'e3', 'e4', 'e5']);
    expect(first.entries[0]?.value).toEqual({ folded: 3, names: ['e0', 'e1', 'e2'] });
    expect(first.archived.map((entry) => entry.name)).toEqual(['e0', 'e1', 'e2']);
    const second = optimizer.optimizeEntries([...first.entries, { name: 'e6', value: 'new' }], {
      maxEntries: 4,
    });
    expect(second.entries.map((entry) => entry.name)).toEqual([SUMMARY_ENTRY, 'e4', 'e5', 'e6']);
    expect(second.entries[0]?.value).toEqual({ folded: 4, names: ['e0', 'e1', 'e2', 'e3'] });
  });

  it('summarize: the summary names the latest folded entries and counts them all', () => {
    const result = new ContextOptimizer({ techniques: ['summarize'] }).optimizeEntries(
      entries(100),
      { maxEntries: 5 },
    );
    expect(result.withinBounds).toBe(true);
    expect(result.archived).toEqual([]); // summarize alone: the folded values are gone
    const summary = result.entries[0]?.value as { folded: number; names: string[] };
    expect(summary.folded).toBe(96);
    expect(summary.names).toHaveLength(SUMMARY_NAMES);
    expect(summary.names.at(-1)).toBe('e95');
  });

  it('says when it could not get within bounds (no technique that applies)', () => {
    const result = new ContextOptimizer({ techniques: ['compress'] }).optimizeEntries(entries(5), {
      maxEntries: 2,
    });
    expect(result.withinBounds).toBe(false);
    expect(result.entries).toHaveLength(5);
  });

  it('keeps every layer within its bounds whatever it is given (all techniques)', () => {
    const optimizer = new ContextOptimizer();
    for (let seed = 1; seed <= 40; seed += 1) {
      const list: LayerEntry[] = Array.from({ length: (seed * 7) % 23 }, (_, index) => ({
        name: `k${index}`,
        value: index % 3 === 0 ? 'x'.repeat((seed * 37 * (index + 1)) % 900) : [index, seed],
      }));
      const bounds = { maxEntries: 5 + (seed % 4), maxBytes: 2000, maxValueBytes: 300 };
      const result = optimizer.optimizeEntries(list, bounds);
      expect(result.withinBounds).toBe(true);
      expect(result.entries.length).toBeLessThanOrEqual(bounds.maxEntries);
      const total = result.entries.reduce((sum, entry) => sum + jsonBytes(entry.value), 0);
      expect(total).toBeLessThanOrEqual(bounds.maxBytes);
      for (const entry of result.entries) {
        expect(jsonBytes(entry.value)).toBeLessThanOrEqual(bounds.maxValueBytes);
      }
    }
  });
});

describe('ContextOptimizer.optimizeRun', () => {
  it('summarizes old steps and brings variables within the run bounds', async () => {
    const run = createRunContext({
      routineId: 'r',
      clock: ticking(),
      bounds: { maxSteps: 3, maxVarBytes: 200, maxValueBytes: 100 },
    });
    for (let index = 0; index < 5; index += 1) {
      await run.step(`step-${index}`, () => {});
    }
    run.intermediateVars.big = 'b'.repeat(500); // set directly: past the bound the run enforces
    run.set('a', 'a'.repeat(90)).set('c', 'c'.repeat(90));
    const result = new ContextOptimizer({
      techniques: ['summarize', 'compress', 'archive'],
    }).optimizeRun(run);
    expect(result.withinBounds).toBe(true);
    expect(run.stepHistory.map((step) => step.name)).toEqual(['step-2', 'step-3', 'step-4']);
    expect(run.summarized).toEqual({
      steps: 2,
      byStatus: { completed: 2, failed: 0, skipped: 0 },
      names: ['step-0', 'step-1'],
      from: '2026-01-01T00:00:01.000Z',
      to: '2026-01-01T00:00:04.000Z',
    });
    expect(run.describeHistory()[0]).toMatch(/^2 earlier steps \(2 completed/);
    const bytes = Object.values(run.intermediateVars).reduce<number>(
      (sum, value) => sum + jsonBytes(value),
      0,
    );
    expect(bytes).toBeLessThanOrEqual(200);
    expect(jsonBytes(run.intermediateVars.big)).toBeLessThanOrEqual(100);
  });

  it('archive alone hands the old steps back', async () => {
    const run = createRunContext({ routineId: 'r', clock: ticking(), bounds: { maxSteps: 1 } });
    await run.step('one', () => {});
    await run.step('two', () => {});
    const result = new ContextOptimizer({ techniques: ['archive'] }).optimizeRun(run);
    expect(result.archivedSteps.map((step) => step.name)).toEqual(['one']);
    expect(run.summarized).toBeUndefined();
    expect(run.stepHistory.map((step) => step.name)).toEqual(['two']);
  });
});
