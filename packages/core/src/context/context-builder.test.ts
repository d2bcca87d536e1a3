import { describe, expect, it } from 'vitest';
import type { ContextSection } from './context-builder.js';
import { buildContext } from './context-builder.js';
import { markdownFormatter, plainTextFormatter } from './formatters.js';

// The one context builder under budgets too small for its header: what it cuts is what trimming
// left, so the text, its sections and its trim record say the same thing at every budget.

const entry = (id: string, words: string) => ({
  id,
  refs: [],
  title: `${id} title`,
  body: `${id} body ${words}`,
  summary: `${id} summary`,
  meta: {},
});

const SECTIONS: ContextSection[] = [
  { id: 'identity', title: 'Identity', entries: [entry('who', 'the runtime of team acme')] },
  {
    id: 'decisions',
    title: 'Recent decisions',
    entries: [entry('pg', 'we use postgres for the hub'), entry('pnpm', 'we use pnpm workspaces')],
  },
];

const config = (tokenBudget: number) => ({
  tokenBudget,
  safetyMargin: 0,
  trimOrder: [
    { section: 'decisions', action: 'compact' as const },
    { section: 'decisions', action: 'drop' as const },
    { section: 'identity', action: 'compact' as const },
    { section: 'identity', action: 'drop' as const },
  ],
  header: {
    title: 'Shared context (ctxbus)',
    lines: ['Team acme, as claude-code sees it, formatted for openclaw.'],
  },
});

describe('buildContext under a budget smaller than its header', () => {
  for (const formatter of [markdownFormatter, plainTextFormatter]) {
    it(`${formatter.format}: cuts what trimming left, and shows no entry it dropped`, () => {
      const full = buildContext(SECTIONS, formatter, config(10_000)).totalTokens;
      for (let budget = 1; budget <= full; budget++) {
        const built = buildContext(SECTIONS, formatter, config(budget));
        expect(built.totalTokens, `budget ${budget}`).toBeLessThanOrEqual(budget);
        const dropped = built.trim.actions
          .filter((action) => action.action === 'drop')
          .map((action) => action.entry);
        const kept = built.sections.flatMap((section) => section.entries.map((e) => e.id));
        for (const id of ['who', 'pg', 'pnpm']) {
          // A dropped entry is in no section and none of its words are in the text.
          if (dropped.includes(id)) {
            expect(kept, `budget ${budget}`).not.toContain(id);
            expect(built.text, `budget ${budget}: ${id} was dropped`).not.toContain(`${id} `);
          }
        }
        // The snapshot counts what the text holds.
        expect(Object.values(built.snapshot.sourceCounts).reduce((a, b) => a + b, 0)).toBe(
          kept.length,
        );
      }
    });
  }

  it('never shows more entries at a smaller budget', () => {
    let shown = Number.POSITIVE_INFINITY;
    for (let budget = 200; budget >= 1; budget--) {
      const built = buildContext(SECTIONS, plainTextFormatter, config(budget));
      const now = built.sections.reduce((n, section) => n + section.entries.length, 0);
      expect(now, `budget ${budget}`).toBeLessThanOrEqual(shown);
      shown = now;
    }
  });
});
