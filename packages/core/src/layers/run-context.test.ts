import { describe, expect, it } from 'vitest';
import { CtxbusError } from '../shared/errors.js';
import { createRunContext, jsonBytes } from './run-context.js';

/** A clock the test turns: each reading is one second after the last. */
function ticking(start = '2026-01-01T00:00:00.000Z'): () => Date {
  let at = Date.parse(start);
  return () => {
    const now = new Date(at);
    at += 1000;
    return now;
  };
}

function counter(prefix = 'id'): () => string {
  let n = 0;
  return () => `${prefix}-${++n}`;
}

describe('RunContext', () => {
  it('keeps inputs, intermediate variables and declared exports apart', () => {
    const run = createRunContext({
      routineId: 'research',
      inputs: { topic: 'sqlite' },
      declaredExports: ['findings'],
      newId: counter(),
    });
    run.set('draft', 'notes').set('findings', ['wal mode']);
    expect(run.runId).toBe('id-1');
    expect(run.get('topic')).toBe('sqlite');
    expect(run.get('draft')).toBe('notes');
    expect(run.inputs).toEqual({ topic: 'sqlite' });
    // Only what is declared is exported: `draft` stays in the run.
    expect(run.exported()).toEqual({ findings: ['wal mode'] });
    run.export('count', 1);
    expect(run.exported()).toEqual({ findings: ['wal mode'], count: 1 });
    expect(() => ((run.inputs as Record<string, unknown>).topic = 'x')).toThrow();
    // A variable shadows the input of its name, even when it is null.
    run.set('topic', null);
    expect(run.get('topic')).toBeNull();
  });

  it('records step history with the injected clock, failed steps included', async () => {
    const run = createRunContext({ routineId: 'r', clock: ticking(), newId: counter('s') });
    await run.step('fetch', () => 1);
    await expect(
      run.step('parse', () => {
        throw new Error('bad input');
      }),
    ).rejects.toThrow('bad input');
    run.beginStep('skip-me');
    expect(run.currentStepId).toBe('s-4');
    run.endStep('skipped');
    expect(run.currentStepId).toBeUndefined();
    expect(run.stepHistory).toEqual([
      {
        stepId: 's-2',
        name: 'fetch',
        status: 'completed',
        startedAt: '2026-01-01T00:00:00.000Z',
        finishedAt: '2026-01-01T00:00:01.000Z',
      },
      {
        stepId: 's-3',
        name: 'parse',
        status: 'failed',
        startedAt: '2026-01-01T00:00:02.000Z',
        finishedAt: '2026-01-01T00:00:03.000Z',
        note: 'bad input',
      },
      expect.objectContaining({ name: 'skip-me', status: 'skipped' }),
    ]);
    expect(run.describeHistory()).toEqual([
      'fetch: completed',
      'parse: failed (bad input)',
      'skip-me: skipped',
    ]);
  });

  it('refuses a second step while one runs, and ending a step that never began', () => {
    const run = createRunContext({ routineId: 'r' });
    run.beginStep('a');
    expect(() => run.beginStep('b')).toThrow(/step a is still running/);
    run.endStep('completed');
    expect(() => run.endStep('completed')).toThrow(CtxbusError);
  });

  it('createChild: a sub-run with its own inputs, the parent id, clock and bounds', () => {
    const clock = ticking();
    const parent = createRunContext({
      routineId: 'parent',
      inputs: { secret: 'only-parent' },
      clock,
      newId: counter(),
      bounds: { maxValueBytes: 100 },
    });
    const child = parent.createChild({ url: 'https://example.com' }, { routineId: 'fetch' });
    expect(child.parentRunId).toBe(parent.runId);
    expect(child.routineId).toBe('fetch');
    expect(child.depth).toBe(1);
    expect(child.get('url')).toBe('https://example.com');
    expect(child.clock).toBe(clock);
    expect(child.bounds.maxValueBytes).toBe(100);
    expect(parent.createChild().routineId).toBe('parent');
  });

  it("a child inherits its parent's variables as they were, and exports only its own", () => {
    const parent = createRunContext({ routineId: 'parent', inputs: { region: 'eu', tier: 1 } });
    parent.set('config', { retries: 2 }).set('tier', 2);
    const child = parent.createChild({ region: 'us' }, { declaredExports: ['config', 'region'] });
    const grandchild = child.createChild();
    expect(child.get('config')).toEqual({ retries: 2 });
    expect(child.get('tier')).toBe(2); // the parent's variable shadows its input
    expect(child.get('region')).toBe('us'); // the child's own input shadows what it inherits
    expect(grandchild.get('region')).toBe('us');
    expect(grandchild.get('config')).toEqual({ retries: 2 });
    expect(child.get('toString')).toBeUndefined();
    // A snapshot: later changes on either side stay on that side.
    parent.set('late', true);
    (child.get('config') as { retries: number }).retries = 9;
    child.set('tier', 3);
    expect(child.get('late')).toBeUndefined();
    expect(parent.get('config')).toEqual({ retries: 2 });
    expect(parent.get('tier')).toBe(2);
    // What it inherited is not its export; its own input is.
    expect(child.exported()).toEqual({ region: 'us' });
    expect(child.inherited).toMatchObject({ tier: 2, region: 'eu' });
  });

  it('createChild inherits nothing with inherit: false, only the names listed otherwise', () => {
    const parent = createRunContext({ routineId: 'parent', inputs: { secret: 'only-parent' } });
    parent.set('shared', 1);
    expect(parent.createChild({}, { inherit: false }).get('secret')).toBeUndefined();
    const picked = parent.createChild({}, { inherit: ['shared', 'missing'] });
    expect(picked.get('shared')).toBe(1);
    expect(picked.get('secret')).toBeUndefined();
    expect(picked.inherited).toEqual({ shared: 1 });
    expect(() => parent.createChild({}, { inherit: ['no spaces'] })).toThrow(
      expect.objectContaining({ code: 'validation_failed' }),
    );
  });

  it("exportToParent: the value becomes the parent's variable and the child's export", () => {
    const parent = createRunContext({ routineId: 'parent' });
    const child = parent.createChild({});
    child.exportToParent('summary', { pages: 3 });
    expect(parent.get('summary')).toEqual({ pages: 3 });
    expect(child.exports).toEqual({ summary: { pages: 3 } });
    expect(() => parent.exportToParent('x', 1)).toThrow(/root run/);
  });

  it('holds its bounds: a value too large, a nesting too deep, a bad name', () => {
    const run = createRunContext({ routineId: 'r', bounds: { maxValueBytes: 20, maxDepth: 2 } });
    expect(() => run.set('big', 'x'.repeat(30))).toThrow(/at most 20/);
    expect(jsonBytes('é')).toBe(4); // two quotes and a two-byte character
    const grandchild = run.createChild().createChild();
    expect(grandchild.depth).toBe(2);
    expect(() => grandchild.createChild()).toThrow(
      expect.objectContaining({ code: 'limit_reached' }),
    );
    expect(() => run.set('no spaces', 1)).toThrow(
      expect.objectContaining({ code: 'validation_failed' }),
    );
  });
});
