import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from '@ctxbus/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bootstrapSharedContext } from './bootstrap.js';
import { createSharedContextBridge } from './bridge.js';
import { parseDocument } from './front-matter.js';
import { readAgentOutput } from './outputs.js';
import type { SharedContextPaths } from './paths.js';
import { sharedContextPaths } from './paths.js';
import { slugify, stageForCurator, writeAgentOutput, writeKpiSnapshot } from './writers.js';

const NOW = new Date('2026-02-04T09:30:00.000Z');
let base: string;
let paths: SharedContextPaths;

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'ctxbus-sc-writers-'));
  paths = sharedContextPaths({ dir: join(base, 'shared-context') });
  bootstrapSharedContext(paths);
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

describe('writeAgentOutput', () => {
  it('writes a dated file with front matter that reads back', () => {
    const written = writeAgentOutput(paths, {
      agent: 'research',
      title: 'Acme: renewal risk (Q1)',
      body: '\nAcme is evaluating a competitor.\n',
      tags: ['renewals', 'renewals', ' acme '],
      entities: ['Acme Corp'],
      source: 'session:abc',
      now: NOW,
    });
    expect(written).toEqual({
      path: join(paths.root, 'agent-outputs', 'research', '2026-02-04', 'acme-renewal-risk-q1.md'),
      relPath: 'agent-outputs/research/2026-02-04/acme-renewal-risk-q1.md',
      created: true,
    });
    const text = readFileSync(written.path, 'utf8');
    expect(text).toBe(
      [
        '---',
        'title: "Acme: renewal risk (Q1)"',
        'timestamp: 2026-02-04T09:30:00.000Z',
        'agent: research',
        'tags: ["renewals","acme"]',
        'entities: ["Acme Corp"]',
        'provenance: {"writer":"shared-context","source":"session:abc"}',
        '---',
        '',
        'Acme is evaluating a competitor.',
        '',
      ].join('\n'),
    );
    expect(parseDocument(text).meta).toMatchObject({
      title: 'Acme: renewal risk (Q1)',
      tags: ['renewals', 'acme'],
    });
    const output = readAgentOutput(paths, written.relPath);
    expect(output?.timestamp.toISOString()).toBe(NOW.toISOString());
    expect(output?.entities).toEqual(['Acme Corp']);
  });

  it('returns the same file on a retry and a new name for a different text', () => {
    const input = { agent: 'research', title: 'Daily', body: 'one', now: NOW };
    const first = writeAgentOutput(paths, input);
    expect(writeAgentOutput(paths, input)).toEqual({ ...first, created: false });
    const other = writeAgentOutput(paths, { ...input, body: 'two' });
    expect(other.relPath).toBe('agent-outputs/research/2026-02-04/daily-2.md');
  });

  it('refuses a bad title or list', () => {
    expect(() => writeAgentOutput(paths, { agent: 'a', title: '  ', body: 'x' })).toThrow(
      /title is 1-300/,
    );
    expect(() =>
      writeAgentOutput(paths, { agent: 'a', title: 't', body: 'x', tags: ['a\nb'] }),
    ).toThrow(/tags:/);
  });
});

describe('the other writers', () => {
  it('stages for the curator and snapshots kpis', () => {
    expect(
      stageForCurator(paths, { agent: 'sales', title: 'Push pricing', body: 'Now.', now: NOW })
        .relPath,
    ).toBe('staging/sales/2026-02-04-push-pricing.md');
    const kpi = writeKpiSnapshot(paths, { agent: 'sales', metrics: { calls: 3 }, now: NOW });
    writeKpiSnapshot(paths, { agent: 'sales', metrics: { calls: 5 }, now: NOW });
    expect(JSON.parse(readFileSync(kpi, 'utf8'))).toEqual({
      agent: 'sales',
      timestamp: NOW.toISOString(),
      metrics: { calls: 5 },
    });
  });

  it('slugs titles', () => {
    expect(slugify('Ça va? Très bien!')).toBe('ca-va-tres-bien');
    expect(slugify('???')).toBe('untitled');
    expect(slugify('x'.repeat(80))).toHaveLength(60);
  });
});

describe('the bridge with no hub', () => {
  it('starts anyway (fail open) and stops cleanly', async () => {
    writeAgentOutput(paths, { agent: 'alpha', title: 'Offline', body: 'x', now: NOW });
    const bridge = createSharedContextBridge({
      paths,
      client: createClient({
        url: 'http://127.0.0.1:9',
        token: 'nope',
        retries: 0,
        timeoutMs: 1_000,
      }),
      stateFile: join(base, 'state.json'),
      watch: false,
    });
    await bridge.start();
    await bridge.stop();
    // Nothing was published, so the file is still to publish next time.
    expect(JSON.parse(readFileSync(join(base, 'state.json'), 'utf8'))).toMatchObject({
      lastSeq: 0,
      files: {},
    });
  });
});
