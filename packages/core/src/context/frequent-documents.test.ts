import { describe, expect, it } from 'vitest';
import type { ContextItem } from '../items/context-item.js';
import { storedItem } from '../items/test-items.js';
import type { ItemUses } from './frequent-documents.js';
import {
  documentFilters,
  FREQUENT_DOCS_WINDOW_DAYS,
  frequentDocsWindow,
  isDocument,
  rankDocuments,
} from './frequent-documents.js';
import { resolveSharedContext } from './resolvers.js';
import { candidatesFromItems, frequentDocsCandidateLimit } from './shared-context.js';

// Seed 000's knowledge layer: "team_knowledge: ... frequently_accessed_docs (pinned
// references)", from the context analytics' counts (issue 27, part 8).

const viewer = { teamId: 'acme', runtime: 'claude-code' };
const now = new Date('2026-11-21T10:00:00Z');

function bundleFor(items: ContextItem[], uses: ItemUses[], runtime = 'claude-code') {
  const ranked = rankDocuments(items, uses, viewer, now, frequentDocsCandidateLimit());
  return resolveSharedContext(candidatesFromItems(items, viewer, now, undefined, ranked), {
    runtime,
    viewer,
    now,
    documentUses: new Map(ranked.map((row) => [row.item.id, row.uses])),
  });
}

const texts = (entries: { text: string }[]) => entries.map((entry) => entry.text);

describe('frequently accessed docs (seed 000, layer 4)', () => {
  const runbook = storedItem({
    title: 'Runbook',
    key: 'docs/runbook',
    summary: 'How to restart the hub',
  });
  const billing = storedItem({ title: 'Billing API', key: 'resource/billing-api' });
  const guide = storedItem({ title: 'Style guide', relevanceTags: ['reference'] });
  const finding = storedItem({ title: 'Queue is slow' });
  const adr = storedItem({ type: 'decision', title: 'Queue on PostgreSQL', key: 'docs/adr-1' });

  it('lists the most used documents under the seed name, by label, as pinned references', () => {
    const bundle = bundleFor(
      [runbook, billing, guide, finding, adr],
      [
        { itemId: billing.id, uses: 9 },
        { itemId: runbook.id, uses: 3 },
        { itemId: guide.id, uses: 1 },
        { itemId: finding.id, uses: 50 },
      ],
    );
    expect(texts(bundle.frequentlyAccessedDocs)).toEqual([
      '- `docs/runbook` **Runbook** _(from claude-code, 2026-11-01)_: How to restart the hub',
      '- `resource/billing-api` **Billing API** _(from claude-code, 2026-11-01)_',
      '- **Style guide** _(from claude-code, 2026-11-01)_',
    ]);
    expect(bundle.formatted).toContain('## Frequently used documents\n- `docs/runbook`');
    // Not a document: the finding (in recent activity). A decision stays a decision, even
    // keyed under docs/.
    expect(texts(bundle.recentInteractionSummaries)).toEqual([
      expect.stringContaining('Queue is slow'),
    ]);
    expect(texts(bundle.recentDecisions)).toEqual([expect.stringContaining('Queue on PostgreSQL')]);
    const openclaw = bundleFor([runbook], [{ itemId: runbook.id, uses: 1 }], 'openclaw');
    expect(openclaw.formatted).toContain(
      'FREQUENTLY USED DOCUMENTS:\n- docs/runbook Runbook (from claude-code): How to restart the hub',
    );
  });

  it('keeps at most five, the most used (ties by id), and none without uses', () => {
    const docs = Array.from({ length: 8 }, (_, index) =>
      storedItem({ title: `Doc ${index}`, key: `docs/d${index}` }),
    );
    const uses = docs.map((doc, index) => ({ itemId: doc.id, uses: index < 7 ? 10 - index : 0 }));
    // Uses 10 down to 4 for Doc 0 to Doc 6; Doc 7 unused.
    const bundle = bundleFor(docs, uses);
    expect(bundle.frequentlyAccessedDocs.map((entry) => entry.refs[0]?.id)).toEqual(
      docs.slice(0, 5).map((doc) => doc.id),
    );
    const tied = bundleFor(
      docs,
      docs.map((doc) => ({ itemId: doc.id, uses: 2 })),
    );
    const byId = [...docs].sort((a, b) => (a.id < b.id ? -1 : 1)).slice(0, 5);
    expect(new Set(tied.frequentlyAccessedDocs.map((entry) => entry.refs[0]?.id))).toEqual(
      new Set(byId.map((doc) => doc.id)),
    );
    expect(bundleFor(docs, []).frequentlyAccessedDocs).toEqual([]);
  });

  it("never lists another runtime's private document", () => {
    const secret = storedItem(
      { title: 'Secret plan', key: 'docs/secret', visibility: 'private' },
      {},
      { teamId: 'acme', runtime: 'openclaw' },
    );
    const uses = [
      { itemId: secret.id, uses: 100 },
      { itemId: runbook.id, uses: 1 },
    ];
    expect(rankDocuments([secret, runbook], uses, viewer, now, 5).map((r) => r.item.id)).toEqual([
      runbook.id,
    ]);
    // Even handed in as a candidate, the selection does not show it.
    const sneaked = resolveSharedContext(
      { ...candidatesFromItems([runbook], viewer, now), frequentlyAccessedDocs: [secret, runbook] },
      {
        runtime: 'claude-code',
        viewer,
        now,
        documentUses: new Map(uses.map((u) => [u.itemId, u.uses])),
      },
    );
    expect(sneaked.formatted).not.toContain('Secret plan');
    expect(texts(sneaked.frequentlyAccessedDocs)).toEqual([expect.stringContaining('Runbook')]);
  });

  it('counts every version of a keyed document (a rewrite keeps its standing)', () => {
    const v1 = storedItem({ title: 'Runbook v1', key: 'docs/rb' });
    const v2 = storedItem({ title: 'Runbook v2', key: 'docs/rb', supersedes: v1.id });
    const old = { ...v1, supersededBy: v2.id };
    const other = storedItem({ title: 'Other', key: 'docs/other' });
    const ranked = rankDocuments(
      [old, v2, other],
      [
        { itemId: v1.id, uses: 3 },
        { itemId: v2.id, uses: 1 },
        { itemId: other.id, uses: 2 },
      ],
      viewer,
      now,
      5,
    );
    expect(ranked.map((row) => [row.item.title, row.uses])).toEqual([
      ['Runbook v2', 4],
      ['Other', 2],
    ]);
  });

  it('does not change the text when only the ranks among the listed documents change', () => {
    const items = [runbook, billing, guide];
    const before = bundleFor(items, [
      { itemId: runbook.id, uses: 5 },
      { itemId: billing.id, uses: 3 },
      { itemId: guide.id, uses: 1 },
    ]);
    const after = bundleFor(items, [
      { itemId: runbook.id, uses: 1 },
      { itemId: billing.id, uses: 4 },
      { itemId: guide.id, uses: 8 },
    ]);
    expect(after.formatted).toBe(before.formatted);
    expect(after.contextHash).toBe(before.contextHash);
  });

  it('ranks by the whole UTC days before today, so the list changes at most once a day', () => {
    expect(frequentDocsWindow(now)).toEqual({ fromDay: '2026-11-07', toDay: '2026-11-20' });
    expect(frequentDocsWindow(new Date('2026-11-21T23:59:59.999Z'))).toEqual(
      frequentDocsWindow(now),
    );
    expect(frequentDocsWindow(new Date('2026-11-22T00:00:00Z')).toDay).toBe('2026-11-21');
    expect(FREQUENT_DOCS_WINDOW_DAYS).toBe(14);
  });

  it('knows a document by its key root or its tag, never a decision', () => {
    const doc = (input: Record<string, unknown>) => isDocument(storedItem(input), viewer, now);
    expect(doc({ title: 'a', key: 'docs' })).toBe(true);
    expect(doc({ title: 'a', key: 'references/x' })).toBe(true);
    expect(doc({ title: 'a', key: 'files/spec.pdf' })).toBe(true);
    expect(doc({ title: 'a', relevanceTags: ['document'] })).toBe(true);
    expect(doc({ title: 'a', key: 'docsy/x' })).toBe(false);
    expect(doc({ title: 'a', key: 'project/x' })).toBe(false);
    expect(doc({ type: 'decision', title: 'a', relevanceTags: ['doc'] })).toBe(false);
    expect(documentFilters()).toHaveLength(5);
  });
});
