import { z } from 'zod';
import { parseOrThrow } from '../shared/validation.js';
import type { ExecutionStep, ExecutionSummary, JsonValue, RunContext } from './run-context.js';
import { jsonBytes } from './run-context.js';

/**
 * Seed 004's ContextOptimizer: keeps each layer within its bounds. Pure and deterministic: it
 * returns what it changed and what left the layer, and the caller writes the archived and
 * referenced values where they belong (`@ctxbus/client`'s Blackboard puts them in persistent
 * resources). The techniques, tried in the configured order:
 *
 * - `compress`: a value over the per-value bound is compacted in place (long strings cut, long
 *   arrays shortened, deep nesting cut, each cut marked with what was left out);
 * - `reference`: a value over the per-value bound is replaced by `{ $ref, bytes }`, the
 *   original handed back to be stored under that reference;
 * - `summarize`: step history past its bound folds into an ExecutionSummary; entries a layer
 *   has too many of fold into one `optimizer-summary` entry naming them;
 * - `archive`: the oldest entries (or steps) leave the layer, handed back for cold storage.
 */

export const OPTIMIZATION_TECHNIQUES = ['compress', 'reference', 'summarize', 'archive'] as const;
export type OptimizationTechnique = (typeof OPTIMIZATION_TECHNIQUES)[number];

export const layerBoundsSchema = z.strictObject({
  maxEntries: z.int().positive().optional(),
  maxBytes: z.int().positive().optional(),
  maxValueBytes: z.int().positive().optional(),
});
export type LayerBounds = z.infer<typeof layerBoundsSchema>;

export const optimizerConfigSchema = z.strictObject({
  techniques: z
    .array(z.enum(OPTIMIZATION_TECHNIQUES))
    .min(1)
    .default([...OPTIMIZATION_TECHNIQUES]),
  /** Where `reference` points: `<referencePrefix><entry name>` (a resource name). */
  referencePrefix: z.string().default('ref/'),
});
export type OptimizerConfig = z.input<typeof optimizerConfigSchema>;

/** One entry of a layer, oldest first in any list the optimizer is given. */
export interface LayerEntry {
  name: string;
  value: JsonValue;
}

export type OptimizationAction =
  | { technique: 'compress'; name: string; fromBytes: number; toBytes: number }
  | { technique: 'reference'; name: string; ref: string; bytes: number }
  | { technique: 'summarize'; names: string[] }
  | { technique: 'archive'; names: string[] };

export interface LayerOptimization {
  /** The layer's entries after optimizing (order kept; a summary entry comes first). */
  entries: LayerEntry[];
  /** Original values now referenced: store each under its `ref`. */
  referenced: (LayerEntry & { ref: string })[];
  /** Entries that left the layer (oldest first). */
  archived: LayerEntry[];
  actions: OptimizationAction[];
  withinBounds: boolean;
}

export const SUMMARY_ENTRY = 'optimizer-summary';
const CUT = '…';

/**
 * The value compacted to at most `maxBytes`, or null when even the tightest compaction does not
 * fit. Strings are cut to a length, arrays to a count (with a `… N more` marker), and nesting
 * past a depth becomes `…`; the limits halve until the value fits.
 */
export function compactValue(value: JsonValue, maxBytes: number): JsonValue | null {
  if (jsonBytes(value) <= maxBytes) return value;
  let chars = Math.max(16, Math.floor(maxBytes / 2));
  let items = 64;
  let depth = 8;
  for (;;) {
    const compacted = compact(value, chars, items, depth);
    if (jsonBytes(compacted) <= maxBytes) return compacted;
    if (chars <= 16 && items <= 1 && depth <= 1) return null;
    chars = Math.max(16, Math.floor(chars / 2));
    items = Math.max(1, Math.floor(items / 2));
    depth = Math.max(1, depth - 1);
  }
}

function compact(value: JsonValue, chars: number, items: number, depth: number): JsonValue {
  if (typeof value === 'string') {
    return value.length > chars ? `${value.slice(0, chars)}${CUT}` : value;
  }
  if (value === null || typeof value !== 'object') return value;
  if (depth === 0) return CUT;
  if (Array.isArray(value)) {
    const kept = value.slice(0, items).map((entry) => compact(entry, chars, items, depth - 1));
    if (value.length > items) kept.push(`${CUT} ${value.length - items} more`);
    return kept;
  }
  const entries = Object.entries(value);
  const out: Record<string, JsonValue> = {};
  for (const [key, entry] of entries.slice(0, items)) {
    out[key] = compact(entry, chars, items, depth - 1);
  }
  if (entries.length > items) out[CUT] = `${entries.length - items} more keys`;
  return out;
}

function totalBytes(entries: readonly LayerEntry[]): number {
  return entries.reduce((sum, entry) => sum + jsonBytes(entry.value), 0);
}

export class ContextOptimizer {
  readonly techniques: readonly OptimizationTechnique[];
  readonly referencePrefix: string;

  constructor(config: OptimizerConfig = {}) {
    const parsed = parseOrThrow(optimizerConfigSchema, config, 'optimizer configuration');
    this.techniques = parsed.techniques;
    this.referencePrefix = parsed.referencePrefix;
  }

  private uses(technique: OptimizationTechnique): boolean {
    return this.techniques.includes(technique);
  }

  /** Brings a list of entries (oldest first) within `bounds`. */
  optimizeEntries(entries: readonly LayerEntry[], bounds: LayerBounds): LayerOptimization {
    parseOrThrow(layerBoundsSchema, bounds, 'bounds');
    const actions: OptimizationAction[] = [];
    const referenced: LayerOptimization['referenced'] = [];
    let kept: LayerEntry[] = [];
    let archived: LayerEntry[] = [];

    // A value over the per-value bound: the first technique (in order) that fits it.
    for (const entry of entries) {
      const bytes = jsonBytes(entry.value);
      if (bounds.maxValueBytes === undefined || bytes <= bounds.maxValueBytes) {
        kept.push(entry);
        continue;
      }
      const next = this.fitValue(entry, bytes, bounds.maxValueBytes, actions, referenced);
      if (next) kept.push(next);
      else archived.push(entry);
    }

    // Too many entries or bytes: the oldest leave (archive) and/or fold into a summary.
    const over = (list: LayerEntry[]) =>
      (bounds.maxEntries !== undefined && list.length > bounds.maxEntries) ||
      (bounds.maxBytes !== undefined && totalBytes(list) > bounds.maxBytes);
    if (over(kept) && (this.uses('archive') || this.uses('summarize'))) {
      const previous = summaryOf(kept.find((entry) => entry.name === SUMMARY_ENTRY)?.value);
      let rest = kept.filter((entry) => entry.name !== SUMMARY_ENTRY);
      const leaving: LayerEntry[] = [];
      const withSummary = () =>
        this.uses('summarize')
          ? [
              summaryEntry(previous.folded + leaving.length, [
                ...previous.names,
                ...leaving.map((entry) => entry.name),
              ]),
              ...rest,
            ]
          : rest;
      while (rest.length > 0 && over(withSummary())) {
        leaving.push(rest[0] as LayerEntry);
        rest = rest.slice(1);
      }
      if (leaving.length > 0) {
        if (this.uses('archive')) {
          archived = [...archived, ...leaving];
          actions.push({ technique: 'archive', names: leaving.map((entry) => entry.name) });
        }
        if (this.uses('summarize')) {
          actions.push({ technique: 'summarize', names: leaving.map((entry) => entry.name) });
        }
      }
      kept = withSummary();
    }
    const archivedNames = archived.map((entry) => entry.name);
    if (archivedNames.length > 0 && !actions.some((action) => action.technique === 'archive')) {
      actions.push({ technique: 'archive', names: archivedNames });
    }
    return { entries: kept, referenced, archived, actions, withinBounds: !over(kept) };
  }

  private fitValue(
    entry: LayerEntry,
    bytes: number,
    maxValueBytes: number,
    actions: OptimizationAction[],
    referenced: LayerOptimization['referenced'],
  ): LayerEntry | null {
    for (const technique of this.techniques) {
      if (technique === 'compress') {
        const value = compactValue(entry.value, maxValueBytes);
        if (value === null) continue;
        actions.push({
          technique,
          name: entry.name,
          fromBytes: bytes,
          toBytes: jsonBytes(value),
        });
        return { name: entry.name, value };
      }
      if (technique === 'reference') {
        const ref = `${this.referencePrefix}${entry.name}`;
        const value = { $ref: ref, bytes };
        if (jsonBytes(value) > maxValueBytes) continue;
        referenced.push({ ...entry, ref });
        actions.push({ technique, name: entry.name, ref, bytes });
        return { name: entry.name, value };
      }
    }
    // Neither fits it: with archive on, the entry leaves the layer whole.
    return null;
  }

  /**
   * Brings a run within its bounds: its step history (`summarize` folds the oldest steps into
   * `run.summarized`, `archive` hands them back) and its intermediate variables (as entries,
   * oldest set first). Changes the run in place.
   */
  optimizeRun(run: RunContext): {
    variables: LayerOptimization;
    archivedSteps: ExecutionStep[];
    withinBounds: boolean;
  } {
    const { maxSteps, maxVarBytes, maxValueBytes } = run.bounds;
    const archivedSteps: ExecutionStep[] = [];
    const overflow = run.stepHistory.length - maxSteps;
    let stepsWithin = overflow <= 0;
    if (overflow > 0 && (this.uses('summarize') || this.uses('archive'))) {
      const old = run.stepHistory.splice(0, overflow);
      if (this.uses('summarize')) run.summarized = summarizeSteps(old, run.summarized);
      if (this.uses('archive')) archivedSteps.push(...old);
      stepsWithin = true;
    }
    const variables = this.optimizeEntries(
      Object.entries(run.intermediateVars).map(([name, value]) => ({ name, value })),
      { maxBytes: maxVarBytes, maxValueBytes },
    );
    for (const name of Object.keys(run.intermediateVars)) delete run.intermediateVars[name];
    for (const entry of variables.entries) run.intermediateVars[entry.name] = entry.value;
    return { variables, archivedSteps, withinBounds: stepsWithin && variables.withinBounds };
  }
}

/** Folds steps into a summary (added to `previous`, when there is one). */
export function summarizeSteps(
  steps: readonly ExecutionStep[],
  previous?: ExecutionSummary,
): ExecutionSummary {
  const summary: ExecutionSummary = previous
    ? { ...previous, byStatus: { ...previous.byStatus }, names: [...previous.names] }
    : {
        steps: 0,
        byStatus: { completed: 0, failed: 0, skipped: 0 },
        names: [],
        from: steps[0]?.startedAt ?? '',
        to: '',
      };
  for (const step of steps) {
    summary.steps += 1;
    summary.byStatus[step.status] += 1;
    if (!summary.names.includes(step.name)) summary.names.push(step.name);
    summary.to = step.finishedAt;
  }
  return summary;
}

/** The summary entry names at most this many folded entries (the latest), and counts all. */
export const SUMMARY_NAMES = 20;

function summaryEntry(folded: number, names: string[]): LayerEntry {
  return { name: SUMMARY_ENTRY, value: { folded, names: names.slice(-SUMMARY_NAMES) } };
}

function summaryOf(value: JsonValue | undefined): { folded: number; names: string[] } {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { folded: 0, names: [] };
  }
  const names = Array.isArray(value.names)
    ? value.names.filter((name): name is string => typeof name === 'string')
    : [];
  return { folded: typeof value.folded === 'number' ? value.folded : names.length, names };
}
