import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bootstrapSharedContext } from './bootstrap.js';
import type { CrossSignalsReport } from './cross-signals.js';
import { curateDaily } from './curator.js';
import type { SharedContextPaths } from './paths.js';
import { sharedContextPaths } from './paths.js';
import { readSharedContextInjection } from './read.js';
import { weeklyCompound } from './weekly.js';
import {
  appendFeedback,
  appendPrioritiesInbox,
  stageForCurator,
  writeAgentOutput,
} from './writers.js';

const NOW = new Date('2026-02-04T18:00:00.000Z');
const at = (iso: string) => new Date(iso);
let base: string;
let paths: SharedContextPaths;

/** Three agents' day: Acme shows up in all three (spelled three ways), pricing in two. */
function fixture(): void {
  writeAgentOutput(paths, {
    agent: 'research',
    title: 'Acme Corp renewal risk',
    body: 'Acme is evaluating a competitor.\n\nEntities:\n- Acme Corp\n- Jane Doe',
    tags: ['renewals'],
    now: at('2026-02-04T09:00:00Z'),
  });
  writeAgentOutput(paths, {
    agent: 'sales',
    title: 'Pipeline update',
    body: 'Call with ACME CORP. on pricing. #Pricing #renewal',
    entities: ['ACME Corp.'],
    now: at('2026-02-04T11:00:00Z'),
  });
  writeAgentOutput(paths, {
    agent: 'support',
    title: 'Ticket digest',
    body: 'Two escalations from acme-corp.\n\nEntities: acme corp, Globex',
    tags: ['pricing'],
    now: at('2026-02-04T12:00:00Z'),
  });
  // Outside the 7-day window: Globex must not become a signal through it.
  writeAgentOutput(paths, {
    agent: 'research',
    title: 'Old Globex note',
    body: 'Entities:\n- Globex',
    now: at('2026-01-20T09:00:00Z'),
  });
  stageForCurator(paths, {
    agent: 'research',
    title: 'Protect the Acme renewal',
    body: 'Renewal closes Friday; all hands on the competitor comparison.',
    now: at('2026-02-04T09:30:00Z'),
  });
  appendPrioritiesInbox(paths, {
    agent: 'sales',
    text: 'Pricing page refresh before the Acme call.\nOwner: sales.',
    now: at('2026-02-04T10:00:00Z'),
  });
  appendFeedback(paths, {
    timestamp: '2026-02-03T16:00:00.000Z',
    agent: 'ada',
    verdict: 'approved',
    subject: 'Competitor comparison format',
    reason: 'Short and sourced.',
  });
  appendFeedback(paths, {
    timestamp: '2026-02-04T08:00:00.000Z',
    agent: 'ada',
    verdict: 'rejected',
    subject: 'Daily ticket dump',
    reason: 'Too long; summarise.',
  });
}

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'ctxbus-sc-curator-'));
  paths = sharedContextPaths({ dir: join(base, 'shared-context') });
  bootstrapSharedContext(paths);
  // A person's edit to the canonical section, which the curator must keep as it is.
  writeFileSync(
    paths.priorities,
    readFileSync(paths.priorities, 'utf8').replace(
      '## Automated inputs',
      '1. Hire a second support engineer (human edit)\n\n## Automated inputs',
    ),
  );
  fixture();
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

const listing = (dir: string): string[] =>
  existsSync(dir) ? readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort() : [];

describe('curateDaily', () => {
  it('merges staging and the inbox into priorities.md, keeping human edits', async () => {
    const inboxBefore = readFileSync(paths.prioritiesInbox, 'utf8');
    const result = await curateDaily(paths, { now: NOW });
    expect(result.stagedMerged).toEqual([
      'staging/research/2026-02-04-protect-the-acme-renewal.md',
    ]);
    expect(result.archived).toEqual([
      'staging-archive/2026-02-04/research/2026-02-04-protect-the-acme-renewal.md',
    ]);
    expect(result.inboxMerged).toEqual(['## 2026-02-04T10:00:00.000Z sales']);
    expect(result.feedbackRolled).toBe(2);
    expect(result.warnings).toEqual([]);

    const lines = readFileSync(paths.priorities, 'utf8').split('\n');
    const canonical = lines.indexOf('## CANONICAL (curator)');
    const human = lines.indexOf('1. Hire a second support engineer (human edit)');
    const staged = lines.findIndex((line) =>
      line.startsWith(
        '- **Protect the Acme renewal** — Renewal closes Friday; all hands on the competitor comparison. _(staged by research, 2026-02-04)_ <!-- staged:',
      ),
    );
    const automated = lines.indexOf('## Automated inputs');
    const input = lines.findIndex((line) =>
      line.startsWith(
        '- 2026-02-04T10:00:00.000Z **sales**: Pricing page refresh before the Acme call. <!-- inbox:',
      ),
    );
    expect(canonical).toBeGreaterThan(0);
    expect(human).toBeGreaterThan(canonical);
    expect(staged).toBeGreaterThan(human);
    expect(automated).toBeGreaterThan(staged);
    expect(input).toBeGreaterThan(automated);
    expect(lines[input + 1]).toBe('  Owner: sales.');

    // Staging is archived, never deleted; the inbox is never truncated.
    expect(listing(paths.staging)).toEqual(['research']);
    expect(readFileSync(join(paths.root, result.archived[0] ?? ''), 'utf8')).toContain(
      'Protect the Acme renewal',
    );
    expect(readFileSync(paths.prioritiesInbox, 'utf8')).toBe(inboxBefore);
    expect(
      readFileSync(paths.feedbackWeekFile('2026-W06'), 'utf8').trim().split('\n'),
    ).toHaveLength(2);
  });

  it('a staged file written by hand (no front matter) is titled by its heading and dated by the file', async () => {
    mkdirSync(join(paths.staging, 'bob'), { recursive: true });
    const file = join(paths.staging, 'bob', 'p.md');
    writeFileSync(file, '# Freeze the API\n\nNo new endpoints until the audit ends.\n');
    const written = new Date('2026-02-03T15:00:00Z');
    utimesSync(file, written, written);
    await curateDaily(paths, { now: NOW });
    const line = readFileSync(paths.priorities, 'utf8')
      .split('\n')
      .find((entry) => entry.includes('staged by bob'));
    expect(line).toMatch(
      /^- \*\*Freeze the API\*\* — No new endpoints until the audit ends\. _\(staged by bob, 2026-02-03\)_ <!-- staged:/,
    );
  });

  it('writes the roundtable: priorities, inputs, today’s outputs, signals, feedback', async () => {
    await curateDaily(paths, { now: NOW });
    const roundtable = readFileSync(paths.roundtableFile('2026-02-04'), 'utf8');
    const lines = roundtable.split('\n');
    expect(lines[0]).toBe('# Roundtable 2026-02-04');
    expect(lines).toContain('## Priorities (canonical)');
    expect(lines).toContain('- **Hire a second support engineer (human edit)**');
    expect(lines).toContain(
      '- **Protect the Acme renewal**: Renewal closes Friday; all hands on the competitor comparison. (staged by research, 2026-02-04)',
    );
    expect(lines).toContain('## Recent priority inputs');
    expect(lines).toContain(
      '- **2026-02-04T10:00:00.000Z sales**: Pricing page refresh before the Acme call.',
    );
    expect(roundtable).not.toContain('- Jane Doe');
    expect(lines).toContain('## Agent outputs (2026-02-04)');
    expect(lines).toContain(
      '- `research` **Acme Corp renewal risk** _(from research, 2026-02-04)_: Acme is evaluating a competitor.',
    );
    expect(lines.some((line) => line.startsWith('- `sales` **Pipeline update**'))).toBe(true);
    expect(roundtable).not.toContain('Old Globex note');
    expect(lines).toContain('## Cross-signals');
    expect(lines).toContain('- **Acme Corp**: 3 agents (research, sales, support), 3 files');
    expect(lines).toContain('## Recent feedback');
    expect(lines).toContain(
      '- **rejected: Daily ticket dump** _(from ada, 2026-02-04)_: Too long; summarise.',
    );
    expect(roundtable).not.toContain('<!--');
  });

  it('writes cross-signals with provenance, in a stable order', async () => {
    const result = await curateDaily(paths, { now: NOW });
    const report = JSON.parse(
      readFileSync(join(paths.root, result.crossSignals), 'utf8'),
    ) as CrossSignalsReport;
    expect(report.date).toBe('2026-02-04');
    expect(report.outputsScanned).toBe(3);
    expect(report.signals.map((signal) => [signal.key, signal.agents])).toEqual([
      ['acme corp', ['research', 'sales', 'support']],
      ['pricing', ['sales', 'support']],
      ['renewal', ['research', 'sales']],
    ]);
    const acme = report.signals[0];
    expect(acme?.label).toBe('Acme Corp');
    expect(acme?.counts).toEqual({ agents: 3, files: 3, mentions: 3 });
    expect(acme?.sources.map((source) => [source.file, source.agent, source.mentions])).toEqual([
      ['agent-outputs/research/2026-02-04/acme-corp-renewal-risk.md', 'research', ['Acme Corp']],
      ['agent-outputs/sales/2026-02-04/pipeline-update.md', 'sales', ['ACME Corp.']],
      ['agent-outputs/support/2026-02-04/ticket-digest.md', 'support', ['acme corp']],
    ]);
    expect(report.enhancer).toEqual({ enabled: false, applied: false });
  });

  it('changes nothing on a rerun, and merges only what is new', async () => {
    await curateDaily(paths, { now: NOW });
    const snapshot = () =>
      Object.fromEntries(
        listing(paths.root)
          .filter((file) => /\.(md|json|jsonl)$/.test(file))
          .map((file) => [file, readFileSync(join(paths.root, file), 'utf8')]),
      );
    const before = snapshot();
    const again = await curateDaily(paths, { now: NOW });
    expect(again).toMatchObject({
      stagedMerged: [],
      archived: [],
      inboxMerged: [],
      feedbackRolled: 0,
      prioritiesChanged: false,
    });
    expect(snapshot()).toEqual(before);

    appendPrioritiesInbox(paths, {
      agent: 'support',
      text: 'Staff the weekend queue.',
      now: at('2026-02-04T19:00:00Z'),
    });
    const third = await curateDaily(paths, { now: NOW });
    expect(third.inboxMerged).toEqual(['## 2026-02-04T19:00:00.000Z support']);
    const text = readFileSync(paths.priorities, 'utf8');
    expect(text.match(/Pricing page refresh/g)).toHaveLength(1);
    expect(text.match(/Staff the weekend queue/g)).toHaveLength(1);
    expect(text.match(/Protect the Acme renewal/g)).toHaveLength(1);
  });

  it('keeps a human-moved merged line where it is and does not merge it twice', async () => {
    await curateDaily(paths, { now: NOW });
    const moved = readFileSync(paths.priorities, 'utf8')
      .split('\n')
      .filter((line) => !line.includes('Protect the Acme renewal'));
    const line =
      readFileSync(paths.priorities, 'utf8')
        .split('\n')
        .find((l) => l.includes('Protect the Acme renewal')) ?? '';
    writeFileSync(paths.priorities, [moved[0], '', line, ...moved.slice(1)].join('\n'));
    rmSync(paths.curatorState);
    await curateDaily(paths, { now: NOW });
    const text = readFileSync(paths.priorities, 'utf8');
    expect(text.match(/Protect the Acme renewal/g)).toHaveLength(1);
    expect(text.match(/Pricing page refresh/g)).toHaveLength(1);
  });

  it('reports malformed inbox entries without dropping the good ones', async () => {
    writeFileSync(
      paths.prioritiesInbox,
      `${readFileSync(paths.prioritiesInbox, 'utf8')}\n## yesterday someone\nNot a valid heading.\n`,
    );
    const result = await curateDaily(paths, { now: NOW });
    expect(result.inboxMerged).toEqual(['## 2026-02-04T10:00:00.000Z sales']);
    expect(result.warnings).toEqual([
      'priorities.inbox.md: skipped a malformed entry: ## yesterday someone',
    ]);
    expect(readFileSync(paths.priorities, 'utf8')).not.toContain('Not a valid heading');
  });
});

describe('readSharedContextInjection', () => {
  it('puts the canonical priorities first, then inputs, then today’s roundtable', async () => {
    await curateDaily(paths, { now: NOW });
    const text = (await readSharedContextInjection(paths, { now: NOW, maxChars: 20_000 })) ?? '';
    const order = [
      '# Shared context',
      '## Shared priorities',
      'Hire a second support engineer',
      '## Priority inputs',
      'Pricing page refresh',
      "## Today's roundtable (2026-02-04)",
      'Acme Corp renewal risk',
    ];
    const positions = order.map((part) => text.indexOf(part));
    expect(
      positions.every((position) => position >= 0),
      String(positions),
    ).toBe(true);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
    expect(text).not.toContain('<!--');
    // The roundtable's copy of the priorities is left out: each shows once.
    expect(text.match(/Hire a second support engineer/g)).toHaveLength(1);
    expect(text.match(/Pricing page refresh/g)).toHaveLength(1);
  });

  it('cuts at a line within maxChars', async () => {
    await curateDaily(paths, { now: NOW });
    const full = (await readSharedContextInjection(paths, { now: NOW, maxChars: 100_000 })) ?? '';
    const cut = (await readSharedContextInjection(paths, { now: NOW, maxChars: 200 })) ?? '';
    expect(cut.length).toBeLessThanOrEqual(200);
    // Whole lines, then perhaps the start of the next one, marked as cut.
    const whole = cut.endsWith('…') ? cut.slice(0, cut.lastIndexOf('\n')) : cut;
    expect(full.startsWith(whole)).toBe(true);
    expect(full[whole.length]).toBe('\n');
    if (cut.endsWith('…')) expect(full.startsWith(cut.slice(0, -1))).toBe(true);
  });

  it('cuts an over-long line inside, at a word, instead of dropping it and all after it', async () => {
    const long = `- ${'Ship the pricing page before the launch review '.repeat(200)}`;
    writeFileSync(paths.priorities, `# Priorities\n\n${long}\n\n- Second item\n`);
    const text = (await readSharedContextInjection(paths, { now: NOW, maxChars: 500 })) ?? '';
    expect(text.length).toBeLessThanOrEqual(500);
    expect(text.length).toBeGreaterThan(400);
    expect(text).toMatch(/review…$|Ship…$|the…$|pricing…$|page…$|before…$|launch…$/);
    expect(text).toContain('- Ship the pricing page');
  });

  it('is null for an empty or missing directory, and leaves out other days’ roundtables', async () => {
    const empty = sharedContextPaths({ dir: join(base, 'empty') });
    expect(await readSharedContextInjection(empty, { now: NOW })).toBeNull();
    bootstrapSharedContext(empty);
    expect(await readSharedContextInjection(empty, { now: NOW })).toBeNull();
    mkdirSync(empty.roundtable, { recursive: true });
    writeFileSync(empty.roundtableFile('2026-02-03'), '# Roundtable\n\nold');
    expect(await readSharedContextInjection(empty, { now: NOW })).toBeNull();
  });
});

describe('weeklyCompound', () => {
  it('writes what worked and what did not for the ISO week, with a keyed item', async () => {
    const result = await weeklyCompound(paths, { now: NOW });
    expect(result.week).toBe('2026-W06');
    expect(result.relPath).toBe('roundtable/weekly-2026-W06.md');
    const lines = readFileSync(paths.weeklyFile('2026-W06'), 'utf8').split('\n');
    expect(lines[0]).toBe('# Weekly compound 2026-W06');
    const worked = lines.indexOf('## What worked');
    const didNot = lines.indexOf("## What didn't");
    expect(lines[worked + 1]).toBe(
      '- **Competitor comparison format** _(approved by ada, 2026-02-03)_: Short and sourced.',
    );
    expect(lines[didNot + 1]).toBe(
      '- **Daily ticket dump** _(rejected by ada, 2026-02-04)_: Too long; summarise.',
    );
    expect(lines).toContain('- **research** (1): Acme Corp renewal risk');
    expect(lines).toContain('- **Acme Corp**: research, sales, support (3 files)');
    expect(result.items).toHaveLength(1);
    expect(result.items[0]).toMatchObject({
      key: 'shared-context/weekly/2026-W06',
      type: 'discovery',
    });
    const again = await weeklyCompound(paths, { now: NOW });
    expect(again.items[0]?.id).toBe(result.items[0]?.id);
  });
});
