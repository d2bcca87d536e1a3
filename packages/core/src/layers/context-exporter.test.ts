import { describe, expect, it } from 'vitest';
import type { BlackboardWriter, ResourceWriter } from './context-exporter.js';
import { ContextExporter } from './context-exporter.js';
import type { JsonValue } from './run-context.js';
import { createRunContext } from './run-context.js';

/** In-memory writers recording what the exporter sends (the bus's are in @ctxbus/client). */
function recordingTargets() {
  const board = new Map<string, JsonValue>();
  const resources = new Map<string, JsonValue>();
  const blackboard: BlackboardWriter = {
    async set(entry, value) {
      board.set(entry, value);
    },
  };
  const writer: ResourceWriter = {
    async put(name, value) {
      resources.set(name, value);
    },
  };
  return { board, resources, targets: { blackboard, resources: writer } };
}

describe('ContextExporter', () => {
  it("flush: a child's exports reach the parent, the root's reach the blackboard", async () => {
    const exporter = new ContextExporter();
    const { board, targets } = recordingTargets();
    const root = createRunContext({ routineId: 'report', declaredExports: ['report'] });
    const child = root.createChild({ q: 'x' }, { declaredExports: ['answer'] });
    child.set('answer', 42).set('scratch', 'not exported');

    expect(await exporter.flush(child, targets)).toEqual({
      toParent: ['answer'],
      toBlackboard: [],
      toPersistent: [],
      filtered: [],
    });
    expect(root.get('answer')).toBe(42);
    expect(root.get('scratch')).toBeUndefined();
    expect(board.size).toBe(0);

    root.set('report', `answer is ${root.get('answer')}`);
    const report = await exporter.flush(root, targets);
    expect(report.toBlackboard).toEqual(['report']);
    expect(Object.fromEntries(board)).toEqual({ report: 'answer is 42' });
  });

  it('auto-export lists add variables to each layer (patterns with *)', async () => {
    const exporter = new ContextExporter({
      autoExportToParent: ['metric-*'],
      autoExportToBlackboard: ['url', 'metric-*'],
      autoExportToPersistent: ['url'],
      resourcePrefix: 'runs/',
    });
    const { board, resources, targets } = recordingTargets();
    const root = createRunContext({ routineId: 'crawl' });
    const child = root.createChild();
    child.set('metric-pages', 10).set('metric-errors', 0).set('tmp', 1);
    await exporter.flush(child, targets);
    expect(root.intermediateVars).toEqual({ 'metric-pages': 10, 'metric-errors': 0 });

    root.set('url', 'https://example.com/report');
    const report = await exporter.flush(root, targets);
    expect(report.toBlackboard).toEqual(['metric-pages', 'metric-errors', 'url']);
    expect(report.toPersistent).toEqual(['runs/url']);
    expect(Object.fromEntries(resources)).toEqual({ 'runs/url': 'https://example.com/report' });
    expect(board.get('url')).toBe('https://example.com/report');
  });

  it('filters keep values out of the layers they name, by name, size or type', async () => {
    const exporter = new ContextExporter({
      autoExportToBlackboard: ['*'],
      autoExportToPersistent: ['*'],
      exportFilters: [
        { names: ['secret-*'] },
        { largerThanBytes: 20, layers: ['blackboard'] },
        { valueTypes: ['number'], layers: ['persistent'] },
      ],
    });
    const { board, resources, targets } = recordingTargets();
    const root = createRunContext({ routineId: 'r' });
    root.set('secret-key', 'k').set('huge', 'x'.repeat(40)).set('count', 3).set('title', 'ok');
    const report = await exporter.flush(root, targets);
    expect([...board.keys()]).toEqual(['count', 'title']);
    expect([...resources.keys()]).toEqual(['title']);
    expect(report.filtered).toEqual([
      { name: 'secret-key', layer: 'blackboard' },
      { name: 'huge', layer: 'blackboard' },
      { name: 'count', layer: 'persistent' },
    ]);

    const parent = createRunContext({ routineId: 'p' });
    const child = parent.createChild({}, { declaredExports: ['secret-token', 'fine'] });
    child.set('secret-token', 't').set('fine', true);
    expect((await exporter.flush(child)).filtered).toEqual([
      { name: 'secret-token', layer: 'parent' },
    ]);
    expect(parent.intermediateVars).toEqual({ fine: true });
  });

  it('triggers: only the configured events flush', async () => {
    const exporter = new ContextExporter({
      exportTriggers: [{ on: 'step-completed', step: 'publish' }],
    });
    const parent = createRunContext({ routineId: 'p' });
    const child = parent.createChild({}, { declaredExports: ['out'] });
    child.set('out', 'v');
    await child.step('draft', () => {});
    expect(await exporter.handle({ type: 'run-completed' }, child)).toBeNull();
    const draft = child.stepHistory[0];
    if (!draft) throw new Error('no step');
    expect(await exporter.handle({ type: 'step-completed', step: draft }, child)).toBeNull();
    expect(parent.get('out')).toBeUndefined();

    await child.step('publish', () => {});
    const publish = child.stepHistory[1];
    if (!publish) throw new Error('no step');
    const report = await exporter.handle({ type: 'step-completed', step: publish }, child);
    expect(report?.toParent).toEqual(['out']);
    expect(parent.get('out')).toBe('v');

    // The default trigger is the run's completion.
    expect(new ContextExporter().triggeredBy({ type: 'run-completed' })).toBe(true);
    expect(new ContextExporter().triggeredBy({ type: 'step-completed', step: publish })).toBe(
      false,
    );
  });

  it('refuses bad configuration and a root flush with nowhere to go', async () => {
    expect(() => new ContextExporter({ exportFilters: [{ layers: ['parent'] }] })).toThrow(
      /would exclude everything/,
    );
    expect(() => new ContextExporter({ exportTriggers: [{ on: 'sometimes' } as never] })).toThrow(
      expect.objectContaining({ code: 'validation_failed' }),
    );
    const root = createRunContext({ routineId: 'r' });
    await expect(new ContextExporter().flush(root)).rejects.toThrow(/needs a blackboard/);
    const { targets } = recordingTargets();
    root.export('x', 1);
    await expect(
      new ContextExporter({ autoExportToPersistent: ['x'] }).flush(root, {
        blackboard: targets.blackboard,
      }),
    ).rejects.toThrow(/needs a resource writer/);
  });
});
