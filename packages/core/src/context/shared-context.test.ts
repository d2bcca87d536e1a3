import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CONTEXT_TYPES, URGENCIES } from '../items/context-item.js';
import { storedItem } from '../items/test-items.js';
import { countTokens } from '../shared/tokens.js';
import type { Task } from '../tasks/tasks.js';
import {
  DEFAULT_RESOLVER,
  getResolver,
  KNOWN_RUNTIMES,
  resolveSharedContext,
} from './resolvers.js';
import type { SharedCandidates } from './shared-context.js';
import { candidatesFromItems, SHARED_TRIM_ORDER, selectSharedContext } from './shared-context.js';

const viewer = { teamId: 'acme', runtime: 'claude-code' };
const now = new Date('2026-11-21T00:00:00Z');
const of = (items: ReturnType<typeof storedItem>[]): SharedCandidates =>
  candidatesFromItems(items, viewer, now);

function sectionTitles(items: ReturnType<typeof storedItem>[]) {
  return Object.fromEntries(
    selectSharedContext(candidatesFromItems(items, viewer, now), { viewer, now }).map((section) => [
      section.id,
      section.entries.map((entry) => entry.title),
    ]),
  );
}

describe('selectSharedContext', () => {
  it("keeps a keyed decision under recent decisions (seed 000's layer 2), other keys as knowledge", () => {
    const items = [
      storedItem({ type: 'decision', title: 'Queue on PostgreSQL', key: 'project/queue' }),
      storedItem({ type: 'decision', title: 'Ship Friday' }),
      storedItem({ type: 'discovery', title: 'Stack', key: 'project/ctxbus/stack' }),
      storedItem({ type: 'decision', title: 'I am Charles', key: 'identity/user' }),
    ];
    expect(sectionTitles(items)).toMatchObject({
      identity: ['You', 'I am Charles'],
      recentDecisions: ['Ship Friday', 'Queue on PostgreSQL'],
      projectContext: ['Stack'],
    });
  });

  it("names each runtime's trust in the identity layer when the runtimes are given", () => {
    const sections = selectSharedContext(of([]), {
      viewer,
      now,
      runtimes: [
        { id: 'claude-code', trust: 'trusted' },
        { id: 'web', trust: 'restricted' },
      ],
    });
    expect(sections.find((section) => section.id === 'identity')?.entries).toEqual([
      expect.objectContaining({ title: 'You' }),
      expect.objectContaining({
        title: 'Runtimes',
        body: 'claude-code (trusted), web (restricted)',
      }),
    ]);
  });

  it('places items in seed 000 sections and keeps the rules', () => {
    const old = storedItem({ type: 'decision', title: 'Use MySQL' });
    const replacement = storedItem({ type: 'decision', title: 'Use SQLite', supersedes: old.id });
    // As a store returns it: the replaced decision knows what replaced it.
    old.supersededBy = replacement.id;
    const items = [
      storedItem({ type: 'status', title: 'User is Charles', key: 'identity/user' }),
      old,
      replacement,
      storedItem({ type: 'decision', title: 'Ship Friday' }),
      storedItem({ type: 'status', title: 'T1 started', scopeKey: 'task:T1' }),
      storedItem({ type: 'status', title: 'T1 half done', scopeKey: 'task:T1' }),
      storedItem({
        type: 'status',
        title: 'T2 done',
        scopeKey: 'task:T2',
        relevanceTags: ['done'],
      }),
      storedItem({ type: 'request', title: 'Approve deploy?' }),
      storedItem({ type: 'alert', title: 'Prod is down', urgency: 'blocking' }),
      storedItem({ type: 'request', title: 'Answered already' }, { consumed: true }),
      storedItem({ type: 'status', title: 'Focus: the hub', key: 'focus' }),
      storedItem({ type: 'discovery', title: 'Found a race' }),
      storedItem({ type: 'discovery', title: 'Thread news', scopeKey: 'thread:42' }),
      storedItem({ type: 'discovery', title: 'Stack', key: 'project/ctxbus/stack' }),
      storedItem({ type: 'discovery', title: 'Expired', expiresAt: '2026-01-01T00:00:00Z' }),
      storedItem(
        { type: 'discovery', title: 'Other team' },
        {},
        { teamId: 'evil', runtime: 'web' },
      ),
      storedItem(
        { type: 'discovery', title: 'Private to web', visibility: 'private' },
        {},
        { teamId: 'acme', runtime: 'web' },
      ),
      storedItem({ type: 'discovery', title: 'Private to me', visibility: 'private' }),
    ];
    expect(sectionTitles(items)).toEqual({
      identity: ['You', 'User is Charles'],
      activeTasks: ['T1 half done'],
      blockedItems: ['Prod is down', 'Approve deploy?'],
      recentDecisions: ['Ship Friday', 'Use SQLite'],
      currentFocus: ['Focus: the hub'],
      recentInteractions: ['Private to me', 'Found a race', 'Answered already'],
      threadSummaries: ['Thread news'],
      projectContext: ['Stack'],
      frequentlyAccessedDocs: [],
    });
  });
});

describe('selectSharedContext with the task store', () => {
  const taskId = (n: number) => `task_019a0000-0000-7000-8000-${String(n).padStart(12, '0')}`;
  const task = (n: number, state: Task['state'], title: string): Task => ({
    id: taskId(n),
    teamId: 'acme',
    title,
    description: null,
    requiredCapabilities: ['code_execution'],
    origin: 'openclaw',
    scope: null,
    input: null,
    idempotencyKey: null,
    state,
    targetRuntime: 'claude-code',
    routing: { reason: 'proxied to claude-code' },
    attempts: 0,
    maxAttempts: 3,
    ttlSeconds: null,
    lease: null,
    result: null,
    error: null,
    createdAt: `2026-11-20T00:00:0${n}.000Z`,
    updatedAt: `2026-11-20T00:00:0${n}.000Z`,
    expiresAt: null,
    approval: null,
  });
  /** A task status item as the hub writes it. */
  const report = (n: number, state: string, title: string, urgency = 'background') =>
    storedItem({
      type: 'status',
      title,
      scopeKey: `task:${taskId(n)}`,
      relevanceTags: ['task'],
      urgency,
      runtimeOptions: { task: { id: taskId(n), state } },
    });

  it('shows the store’s open tasks first, newest first, then agents’ own threads; stale reports are dropped', () => {
    const items = [
      report(1, 'SUBMITTED', 'Task SUBMITTED: one'),
      report(2, 'AUTH_REQUIRED', 'Task AUTH_REQUIRED: two', 'blocking'),
      report(2, 'SUBMITTED', 'Task SUBMITTED: two'),
      report(3, 'AUTH_REQUIRED', 'Task AUTH_REQUIRED: three', 'blocking'),
      report(4, 'REJECTED', 'Task REJECTED: four', 'blocking'),
      // No longer open in the store: its newest report is not tagged done, yet it is over.
      report(5, 'WORKING', 'Task WORKING: five'),
      storedItem({ type: 'status', title: 'T9 in progress', scopeKey: 'task:T9' }),
    ];
    const tasks = [
      task(1, 'SUBMITTED', 'one'),
      task(2, 'SUBMITTED', 'two'),
      task(3, 'AUTH_REQUIRED', 'three'),
    ];
    const sections = Object.fromEntries(
      selectSharedContext(of(items), { viewer, now, tasks }).map((section) => [
        section.id,
        section.entries.map((entry) => entry.title),
      ]),
    );
    // Three waits for approval (blocking, shown once); four was rejected (blocking until
    // consumed); two's approval wait is over, so its old blocking report is not.
    expect(sections.blockedItems).toEqual(['Task REJECTED: four', 'Task AUTH_REQUIRED: three']);
    expect(sections.activeTasks).toEqual(['SUBMITTED: two', 'SUBMITTED: one', 'T9 in progress']);
    expect(JSON.stringify(sections)).not.toContain('five');
  });

  it('without tasks, the section is the status items’ as before', () => {
    const items = [report(5, 'WORKING', 'Task WORKING: five')];
    const [, active] = selectSharedContext(of(items), { viewer, now });
    expect(active?.entries.map((entry) => entry.title)).toEqual(['Task WORKING: five']);
  });
});

describe('resolveSharedContext', () => {
  it('formats Markdown for claude-code and terse text for openclaw', () => {
    const items = [
      storedItem({
        type: 'decision',
        title: 'Use **SQLite**',
        content: 'Because:\n- embedded\n- fast',
      }),
    ];
    const md = resolveSharedContext(of(items), { runtime: 'claude-code', viewer, now });
    expect(md.format).toBe('markdown');
    expect(md.formatted).toContain('## Recent decisions');
    expect(md.formatted).toContain('  - embedded');
    expect(md.formattedMarkdown).toBe(md.formatted);
    expect(md.tokenBudget).toBe(4000);

    const text = resolveSharedContext(of(items), { runtime: 'openclaw', viewer, now });
    expect(text.format).toBe('text');
    expect(text.formatted).toContain('RECENT DECISIONS:');
    expect(text.formatted).not.toContain('**');
    // Another runtime's format is a preview: the header says whose view it is.
    expect(md.formatted).toContain('Team acme, for claude-code.');
    expect(text.formatted).toContain('Team acme, as claude-code sees it, formatted for openclaw.');
    // Seed 000's formattedMarkdown is Markdown for every runtime: the same sections.
    expect(text.formattedMarkdown).toContain('## Recent decisions');
    expect(text.formattedMarkdown).toContain('  - embedded');
    // Seed 000's named fields are the built sections' entries under the seed's names.
    for (const bundle of [md, text]) {
      const section = (id: string) => bundle.sections.find((s) => s.id === id)?.entries ?? [];
      expect(bundle.recentDecisions).toEqual(section('recentDecisions'));
      expect(bundle.activeTasks).toEqual(section('activeTasks'));
      expect(bundle.recentInteractionSummaries).toEqual(section('recentInteractions'));
      expect(bundle.identity).toMatchObject({
        teamId: viewer.teamId,
        entries: section('identity'),
      });
    }
    expect(text.tokenBudget).toBe(2000);
    expect(text.warnings).toEqual([expect.objectContaining({ type: 'flattened' })]);

    const web = resolveSharedContext(of(items), { runtime: 'web', viewer, now });
    expect(web.items?.map((item) => item.id)).toEqual([items[0]?.id]);
  });

  it("gives seed 000's currentFocus as the focus text alone, the bullet only in formatted", () => {
    const focus = storedItem({
      type: 'status',
      key: 'focus',
      title: 'Current focus',
      content: 'Ship the billing migration this week.',
      summary: 'Billing migration.',
    });
    for (const runtime of ['claude-code', 'openclaw', 'web']) {
      const bundle = resolveSharedContext(of([focus]), { runtime, viewer, now });
      expect(bundle.currentFocus).toBe('Ship the billing migration this week.');
      expect(bundle.formatted).toContain('Current focus');
    }
    // Where the budget compacts the entry, the field is the summary the text shows.
    const tight = resolveSharedContext(of([focus]), {
      runtime: 'claude-code',
      viewer,
      now,
      tokenBudget: 70,
    });
    const [entry] = tight.sections.find((s) => s.id === 'currentFocus')?.entries ?? [];
    expect(entry?.mode).toBe('compact');
    expect(tight.currentFocus).toBe('Billing migration.');
    expect(resolveSharedContext(of([]), { runtime: 'openclaw', viewer, now }).currentFocus).toBe(
      '',
    );
  });

  it('lists a decision stated twice (two sessions, two runtimes) once, the newest', () => {
    const said = (runtime: string, title: string) =>
      storedItem({ type: 'decision', title, content: title }, {}, { teamId: 'acme', runtime });
    const items = [
      said('codex', 'Use Kafka for events'),
      said('claude-code', 'Use Postgres for billing'),
      said('codex', 'Use  kafka for events'),
      said('openclaw', 'use Kafka for events'),
    ];
    const bundle = resolveSharedContext(of(items), { runtime: 'web', viewer, now });
    const decisions = bundle.sections.find((section) => section.id === 'recentDecisions');
    expect(decisions?.entries.map((entry) => entry.refs.map((ref) => ref.id))).toEqual([
      [items[3]?.id],
      [items[1]?.id],
    ]);
  });

  it('a compacted Markdown entry still names its writer and urgency, without the date', () => {
    const items = [
      storedItem(
        {
          type: 'decision',
          title: 'Postgres for the hosted tier',
          summary: 'Hosted deployments run on PostgreSQL.',
          content: 'Hosted deployments run on PostgreSQL. '.repeat(40),
          urgency: 'attention',
        },
        {},
        { teamId: 'acme', runtime: 'openclaw' },
      ),
    ];
    const tight = resolveSharedContext(of(items), {
      runtime: 'claude-code',
      viewer,
      now,
      tokenBudget: 120,
    });
    const entry = tight.sections.flatMap((section) => section.entries).at(-1);
    expect(entry?.mode).toBe('compact');
    expect(tight.formatted).toContain(
      '- **Postgres for the hosted tier** _(attention, from openclaw)_: Hosted deployments run on PostgreSQL.',
    );
  });

  it("lists each runtime's trust in the text format as in Markdown (seed 000's trust_level)", () => {
    const runtimes = [
      { id: 'claude-code', trust: 'standard' },
      { id: 'openclaw', trust: 'restricted' },
    ];
    const line = 'Runtimes: claude-code (standard), openclaw (restricted)';
    for (const runtime of ['openclaw', 'claude-code']) {
      const bundle = resolveSharedContext(of([]), { runtime, viewer, now, runtimes });
      expect(bundle.formatted.replaceAll('**', '')).toContain(`- ${line}`);
    }
  });

  it('gives a runtime without a resolver of its own the default format: plain Markdown', () => {
    const items = [storedItem({ type: 'decision', title: 'Use **SQLite**' })];
    for (const runtime of ['my-agent', 'constructor', 'tostring']) {
      expect(KNOWN_RUNTIMES).not.toContain(runtime);
      expect(getResolver(runtime)).toBe(DEFAULT_RESOLVER);
      const bundle = resolveSharedContext(of(items), { runtime, viewer, now });
      expect(bundle.runtime).toBe(runtime);
      expect(bundle.format).toBe('markdown');
      expect(bundle.tokenBudget).toBe(DEFAULT_RESOLVER.defaultTokenBudget);
      expect(bundle.formatted).toBe(bundle.formattedMarkdown);
      expect(bundle.formatted).toContain('## ');
      // A title's emphasis marks are escaped: they cannot close the entry's bold.
      expect(bundle.formatted).toContain('**Use \\*\\*SQLite\\*\\***');
      expect(bundle.formatted).toContain(`as claude-code sees it, formatted for ${runtime}`);
      expect(bundle.items).toBeUndefined();
      expect(bundle.warnings).toEqual([]);
    }
    // The runtimes with a resolver of their own keep it.
    expect(getResolver('openclaw')).not.toBe(DEFAULT_RESOLVER);
    expect(KNOWN_RUNTIMES).toEqual(['claude-code', 'openclaw', 'web']);
  });

  it('trims in the fixed order and records what it trimmed', () => {
    const items = Array.from({ length: 30 }, (_, index) =>
      storedItem({
        type: (['decision', 'discovery', 'status'] as const)[index % 3],
        title: `Item number ${index}`,
        content: 'lorem ipsum dolor sit amet '.repeat(20),
        ...(index % 3 === 2 ? { scopeKey: `task:T${index}` } : {}),
      }),
    );
    const bundle = resolveSharedContext(of(items), {
      runtime: 'claude-code',
      viewer,
      now,
      tokenBudget: 600,
    });
    expect(bundle.trim.trimmed).toBe(true);
    expect(bundle.totalTokens).toBeLessThanOrEqual(bundle.effectiveBudget);
    const order = SHARED_TRIM_ORDER.map((step) => step.section);
    const firstStepOf = (action: { section: string }) => order.indexOf(action.section);
    const positions = bundle.trim.actions.map(firstStepOf);
    expect(positions[0]).toBe(0);
    // Recent activity is dropped entirely before any decision is touched.
    expect(bundle.sections.find((section) => section.id === 'recentInteractions')).toBeUndefined();
  });
});

const itemArbitrary = fc.record({
  type: fc.constantFrom(...CONTEXT_TYPES),
  title: fc.string({ minLength: 1, maxLength: 80 }).filter((title) => title.trim().length > 0),
  content: fc.string({ unit: 'grapheme', maxLength: 800 }),
  urgency: fc.constantFrom(...URGENCIES),
  scopeKey: fc.option(fc.constantFrom('task:A', 'task:B', 'thread:X', 'user:me'), {
    nil: undefined,
  }),
  key: fc.option(fc.constantFrom('identity/user', 'focus', 'project/a', 'project/b/c'), {
    nil: undefined,
  }),
  consumed: fc.boolean(),
});

describe('context builder properties', () => {
  it('never exceeds the budget, for every runtime and budget', () => {
    fc.assert(
      fc.property(
        fc.array(itemArbitrary, { maxLength: 25 }),
        fc.integer({ min: 1, max: 3000 }),
        fc.constantFrom(...KNOWN_RUNTIMES),
        (inputs, tokenBudget, runtime) => {
          const items = inputs.map(({ consumed, scopeKey, key, ...input }) =>
            storedItem(
              { ...input, ...(scopeKey ? { scopeKey } : {}), ...(key ? { key } : {}) },
              { consumed },
            ),
          );
          const bundle = resolveSharedContext(of(items), { runtime, viewer, now, tokenBudget });
          expect(bundle.totalTokens).toBeLessThanOrEqual(bundle.effectiveBudget);
          expect(bundle.effectiveBudget).toBeLessThanOrEqual(tokenBudget);
          expect(countTokens(bundle.formatted)).toBe(bundle.totalTokens);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('is deterministic: any order of the same items gives the same text and hash', () => {
    fc.assert(
      fc.property(
        fc.array(itemArbitrary, { minLength: 1, maxLength: 20 }),
        fc.integer({ min: 50, max: 2000 }),
        fc.integer(),
        (inputs, tokenBudget, seed) => {
          const items = inputs.map(({ consumed, scopeKey, key, ...input }) =>
            storedItem(
              { ...input, ...(scopeKey ? { scopeKey } : {}), ...(key ? { key } : {}) },
              { consumed },
            ),
          );
          const candidates = of(items);
          const shuffled = Object.fromEntries(
            Object.entries(candidates).map(([section, list]) => [
              section,
              [...list].sort(
                (a, b) =>
                  (((a.seq * 2654435761) ^ seed) % 97) - (((b.seq * 2654435761) ^ seed) % 97),
              ),
            ]),
          ) as unknown as SharedCandidates;
          const first = resolveSharedContext(of(items), {
            runtime: 'claude-code',
            viewer,
            now,
            tokenBudget,
          });
          const second = resolveSharedContext(shuffled, {
            runtime: 'claude-code',
            viewer,
            now,
            tokenBudget,
          });
          expect(second.formatted).toBe(first.formatted);
          expect(second.contextHash).toBe(first.contextHash);
          expect(second.trim).toEqual(first.trim);
        },
      ),
      { numRuns: 100 },
    );
  });

  it('changes the hash when the inputs change', () => {
    const a = storedItem({ type: 'decision', title: 'A' });
    const b = storedItem({ type: 'decision', title: 'B' });
    const one = resolveSharedContext(of([a]), { runtime: 'claude-code', viewer, now });
    const two = resolveSharedContext(of([a, b]), { runtime: 'claude-code', viewer, now });
    const smaller = resolveSharedContext(of([a]), {
      runtime: 'claude-code',
      viewer,
      now,
      tokenBudget: 3000,
    });
    expect(new Set([one.contextHash, two.contextHash, smaller.contextHash]).size).toBe(3);
  });
});
