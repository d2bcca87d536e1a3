import { hashValue } from '../shared/canonical-hash.js';
import { countTokens, effectiveBudget, truncateToTokens } from '../shared/tokens.js';

/** The store version of an item that an entry was built from (replay needs both). */
export interface ItemRef {
  id: string;
  seq: number;
}

/** One thing to show: a context item, a chat message, a tool snippet... */
export interface ContextEntry {
  /** Stable id, used in trim records. */
  id: string;
  refs: ItemRef[];
  title: string;
  /** Full text (already capped per entry). */
  body: string;
  /** Compact text used once the entry is compacted to save tokens. */
  summary: string;
  meta: EntryMeta;
}

export interface EntryMeta {
  type?: string;
  urgency?: string;
  runtime?: string;
  createdAt?: string;
  tags?: readonly string[];
  /** Short label a formatter may print before the title (a task id, a key...). */
  label?: string;
}

export interface ContextSection {
  id: string;
  title: string;
  /** Most important first: trimming drops and compacts from the end. */
  entries: ContextEntry[];
}

export type EntryMode = 'full' | 'compact';

export interface RenderedSection {
  section: ContextSection;
  lines: string[];
}

/** Turns sections into one runtime's text. Supplied by that runtime's resolver. */
export interface ContextFormatter {
  format: 'markdown' | 'text';
  renderEntry(entry: ContextEntry, mode: EntryMode, section: ContextSection): string;
  renderDocument(header: DocumentHeader, sections: RenderedSection[]): string;
}

export interface DocumentHeader {
  title: string;
  lines: string[];
}

/** One trimming step; steps run in the order given until the text fits. */
export interface TrimStep {
  section: string;
  action: 'compact' | 'drop';
  /** For drop: how many entries (from the front) to keep in this step. */
  keep?: number;
}

export interface BuildConfig {
  tokenBudget: number;
  /** Fraction of the budget held back for tokenizer differences. */
  safetyMargin: number;
  trimOrder: readonly TrimStep[];
  header: DocumentHeader;
}

export interface TrimAction {
  section: string;
  entry: string | null;
  action: 'compact' | 'drop' | 'truncate';
}

export interface TrimRecord {
  trimmed: boolean;
  /** Tokens the untrimmed text would have had. */
  tokensBeforeTrim: number;
  actions: TrimAction[];
}

export interface BuiltEntry {
  id: string;
  refs: ItemRef[];
  mode: EntryMode;
  text: string;
}

export interface BuiltSection {
  id: string;
  title: string;
  entries: BuiltEntry[];
}

export interface BuiltContext {
  format: 'markdown' | 'text';
  text: string;
  sections: BuiltSection[];
  totalTokens: number;
  tokenBudget: number;
  effectiveBudget: number;
  trim: TrimRecord;
  contextHash: string;
  snapshot: ContextSnapshot;
}

/** Seed 002's replay record: enough to rebuild the same context and check its hash. */
export interface ContextSnapshot {
  contextHash: string;
  sourceCounts: Record<string, number>;
  trimmed: boolean;
  itemRefs: ItemRef[];
}

export const BUILDER_VERSION = 1;

interface WorkingEntry {
  entry: ContextEntry;
  mode: EntryMode | 'dropped';
  full: string;
  compact: string;
  fullTokens: number;
  compactTokens: number;
}

interface WorkingSection {
  section: ContextSection;
  entries: WorkingEntry[];
}

function liveTokens(entry: WorkingEntry): number {
  if (entry.mode === 'dropped') return 0;
  return entry.mode === 'full' ? entry.fullTokens : entry.compactTokens;
}

function render(
  formatter: ContextFormatter,
  header: DocumentHeader,
  working: WorkingSection[],
): string {
  const rendered: RenderedSection[] = [];
  for (const { section, entries } of working) {
    const lines: string[] = [];
    for (const entry of entries) {
      if (entry.mode === 'full') lines.push(entry.full);
      else if (entry.mode === 'compact') lines.push(entry.compact);
    }
    if (lines.length > 0) rendered.push({ section, lines });
  }
  return formatter.renderDocument(header, rendered);
}

/**
 * Yields every trimming action the config allows, in its fixed order. Each action is applied
 * only while the text is still over budget, so the result depends on nothing but the inputs.
 */
function* trimActions(
  working: WorkingSection[],
  trimOrder: readonly TrimStep[],
): Generator<{ section: WorkingSection; entry: WorkingEntry; action: 'compact' | 'drop' }> {
  const byId = new Map(working.map((section) => [section.section.id, section]));
  for (const step of trimOrder) {
    const section = byId.get(step.section);
    if (!section) continue;
    const keep = step.action === 'drop' ? Math.max(step.keep ?? 0, 0) : 0;
    for (let index = section.entries.length - 1; index >= keep; index--) {
      const entry = section.entries[index];
      if (!entry) continue;
      if (step.action === 'compact' && entry.mode === 'full' && entry.compact !== entry.full) {
        yield { section, entry, action: 'compact' };
      } else if (step.action === 'drop' && entry.mode !== 'dropped') {
        yield { section, entry, action: 'drop' };
      }
    }
  }
}

/**
 * The one context builder. Renders the sections with the runtime's formatter, and while the
 * text is over the effective budget, compacts and drops entries in the configured order,
 * recording each step. If every step is spent and the text is still too long, the text is cut
 * at a token boundary. The result never exceeds the budget, and equal inputs and config give
 * equal text and an equal context hash.
 */
export function buildContext(
  sections: readonly ContextSection[],
  formatter: ContextFormatter,
  config: BuildConfig,
): BuiltContext {
  const budget = effectiveBudget(config.tokenBudget, config.safetyMargin);
  const working: WorkingSection[] = sections.map((section) => ({
    section,
    entries: section.entries.map((entry): WorkingEntry => {
      const full = formatter.renderEntry(entry, 'full', section);
      const compact = formatter.renderEntry(entry, 'compact', section);
      const fullTokens = countTokens(full);
      const compactTokens = compact === full ? fullTokens : countTokens(compact);
      return { entry, mode: 'full', full, compact, fullTokens, compactTokens };
    }),
  }));

  const actions: TrimAction[] = [];
  let text = render(formatter, config.header, working);
  let exact = countTokens(text);
  const tokensBeforeTrim = exact;
  // Estimates steer the cheap loop; the exact count of the rendered text has the last word.
  let estimate = exact;
  let estimateTrusted = true;

  if (exact > budget) {
    for (const { section, entry, action } of trimActions(working, config.trimOrder)) {
      const before = liveTokens(entry);
      entry.mode = action === 'compact' ? 'compact' : 'dropped';
      estimate -= before - liveTokens(entry);
      actions.push({ section: section.section.id, entry: entry.entry.id, action });
      if (!estimateTrusted || estimate <= budget) {
        text = render(formatter, config.header, working);
        exact = countTokens(text);
        if (exact <= budget) break;
        estimate = exact;
        estimateTrusted = false;
      }
    }
    if (exact > budget) {
      // Every step spent: the last rendering may predate the last steps (the estimate was
      // still over), so what is cut is what is left, never entries already dropped.
      text = render(formatter, config.header, working);
      exact = countTokens(text);
    }
    if (exact > budget) {
      text = truncateToTokens(text, budget);
      exact = countTokens(text);
      actions.push({ section: '*', entry: null, action: 'truncate' });
    }
  }

  const built: BuiltSection[] = [];
  const itemRefs: ItemRef[] = [];
  const sourceCounts: Record<string, number> = {};
  for (const { section, entries } of working) {
    const kept = entries.filter((entry) => entry.mode !== 'dropped');
    if (kept.length === 0) continue;
    sourceCounts[section.id] = kept.length;
    built.push({
      id: section.id,
      title: section.title,
      entries: kept.map((entry) => {
        itemRefs.push(...entry.entry.refs);
        const mode = entry.mode as EntryMode;
        return {
          id: entry.entry.id,
          refs: entry.entry.refs,
          mode,
          text: mode === 'full' ? entry.full : entry.compact,
        };
      }),
    });
  }

  const trim: TrimRecord = { trimmed: actions.length > 0, tokensBeforeTrim, actions };
  const contextHash = `ctx_${hashValue({
    builder: BUILDER_VERSION,
    format: formatter.format,
    tokenBudget: config.tokenBudget,
    safetyMargin: config.safetyMargin,
    trimOrder: config.trimOrder,
    text,
    itemRefs,
  })}`;
  return {
    format: formatter.format,
    text,
    sections: built,
    totalTokens: exact,
    tokenBudget: config.tokenBudget,
    effectiveBudget: budget,
    trim,
    contextHash,
    snapshot: { contextHash, sourceCounts, trimmed: trim.trimmed, itemRefs },
  };
}
