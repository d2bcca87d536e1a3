import { existsSync, mkdirSync } from 'node:fs';
import { CtxbusError } from '@ctxbus/core/contract';
import { z } from 'zod';
import { policyWrite } from './files.js';
import type { LlmOption } from './llm.js';
import { completeWith } from './llm.js';
import type { AgentOutput } from './outputs.js';
import { listAgentOutputs, normaliseTerm } from './outputs.js';
import type { SharedContextPaths } from './paths.js';
import { isoDate } from './paths.js';

/** Where one signal was seen. */
export interface SignalSource {
  file: string;
  agent: string;
  timestamp: string;
  /** How the file names it: as an entity, a tag, or both. */
  as: ('entity' | 'tag')[];
  /** The exact spellings used in that file. */
  mentions: string[];
}

export interface CrossSignal {
  /** The normalised term (see `normaliseTerm`). */
  key: string;
  /** The most frequent spelling (ties: the one seen first, in path order). */
  label: string;
  agents: string[];
  counts: { agents: number; files: number; mentions: number };
  sources: SignalSource[];
  /** Normalised terms the enhancer merged into this one. */
  mergedFrom?: string[];
  /** The enhancer's explanation of the merge. */
  explanation?: string;
}

export interface CrossSignalsReport {
  version: 1;
  date: string;
  generatedAt: string;
  window: { from: string; to: string; days: number };
  minAgents: number;
  outputsScanned: number;
  signals: CrossSignal[];
  enhancer: { enabled: boolean; applied: boolean; model?: string; merges?: number };
  warnings: string[];
}

export interface CrossSignalOptions {
  now: Date;
  windowDays?: number;
  minAgents?: number;
  /** The semantic enhancer: off unless given. */
  llm?: LlmOption;
  /** Write `cross-signals/<date>.json` (default true). */
  write?: boolean;
}

interface Mention {
  output: AgentOutput;
  text: string;
  as: 'entity' | 'tag';
}

function collectMentions(outputs: readonly AgentOutput[]): Map<string, Mention[]> {
  const byKey = new Map<string, Mention[]>();
  for (const output of outputs) {
    const add = (text: string, as: 'entity' | 'tag') => {
      const key = normaliseTerm(text);
      if (key.length < 2) return;
      const list = byKey.get(key) ?? [];
      list.push({ output, text: text.trim(), as });
      byKey.set(key, list);
    };
    for (const entity of output.entities) add(entity, 'entity');
    for (const tag of output.tags) add(tag, 'tag');
  }
  return byKey;
}

function signalOf(key: string, mentions: readonly Mention[]): CrossSignal {
  const byFile = new Map<string, SignalSource>();
  const spellings = new Map<string, number>();
  for (const { output, text, as } of mentions) {
    spellings.set(text, (spellings.get(text) ?? 0) + 1);
    const source = byFile.get(output.relPath) ?? {
      file: output.relPath,
      agent: output.agent,
      timestamp: output.timestamp.toISOString(),
      as: [],
      mentions: [],
    };
    if (!source.as.includes(as)) source.as.push(as);
    if (!source.mentions.includes(text)) source.mentions.push(text);
    byFile.set(output.relPath, source);
  }
  const sources = [...byFile.values()]
    .map((source) => ({ ...source, as: source.as.sort(), mentions: source.mentions.sort() }))
    .sort((a, b) => a.file.localeCompare(b.file));
  const agents = [...new Set(sources.map((source) => source.agent))].sort();
  // Map order is first-seen order (files sorted by path): ties go to the earliest spelling.
  let label = key;
  let best = 0;
  for (const [spelling, count] of spellings) {
    if (count > best) [label, best] = [spelling, count];
  }
  return {
    key,
    label,
    agents,
    counts: { agents: agents.length, files: sources.length, mentions: mentions.length },
    sources,
  };
}

function bySignalStrength(a: CrossSignal, b: CrossSignal): number {
  return (
    b.counts.agents - a.counts.agents ||
    b.counts.files - a.counts.files ||
    b.counts.mentions - a.counts.mentions ||
    a.key.localeCompare(b.key)
  );
}

const mergesSchema = z.object({
  merges: z
    .array(
      z.object({
        into: z.string().min(1),
        from: z.array(z.string().min(1)).min(1),
        reason: z.string().max(500).optional(),
      }),
    )
    .max(100),
});

const ENHANCER_PROMPT = `You merge fuzzy duplicates among topics that several AI agents mentioned.
You get a JSON list of normalised terms. Return JSON {"merges":[{"into":"<term>","from":["<term>",...],"reason":"<short>"}]}
where every term is copied exactly from the list, "into" is the canonical one, and the terms in "from" name the
same real-world thing (synonyms, a person and their role, a product and its repository). Return {"merges":[]} when
nothing should be merged. Never invent terms.`;

/** Asks the model which terms to merge; returns the merges that name known terms only. */
async function askForMerges(
  llm: LlmOption,
  terms: readonly string[],
): Promise<z.infer<typeof mergesSchema>['merges']> {
  const answer = await completeWith(llm, [
    { role: 'system', content: ENHANCER_PROMPT },
    { role: 'user', content: JSON.stringify({ terms }) },
  ]);
  let value: unknown;
  try {
    value = JSON.parse(answer.replace(/^```(?:json)?\s*|\s*```$/g, ''));
  } catch {
    throw new CtxbusError('internal', 'the enhancer did not answer with JSON');
  }
  const parsed = mergesSchema.safeParse(value);
  if (!parsed.success)
    throw new CtxbusError('internal', 'the enhancer answered in an unexpected shape');
  const known = new Set(terms);
  return parsed.data.merges.filter(
    (merge) => known.has(merge.into) && merge.from.every((term) => known.has(term)),
  );
}

/** How many terms, at most, are sent to the enhancer (those seen by the most agents first). */
export const ENHANCER_MAX_TERMS = 200;

/**
 * Seed 001's cross-signal detection: terms (front matter `entities:`, an `Entities:` section,
 * front matter tags and #hashtags, normalised) that outputs of at least `minAgents` distinct
 * agents mention within `windowDays` before `now`. Deterministic, stably ordered (most agents,
 * then files, then mentions, then key), each signal with its provenance. With `llm`, an
 * OpenAI-compatible model may merge fuzzy duplicates first; on any failure or timeout the
 * deterministic result stands and the report carries a warning. Writes
 * `cross-signals/<YYYY-MM-DD>.json` (curator) unless `write` is false.
 */
export async function detectCrossSignals(
  paths: SharedContextPaths,
  options: CrossSignalOptions,
): Promise<CrossSignalsReport & { relPath: string | null }> {
  const windowDays = options.windowDays ?? 7;
  const minAgents = options.minAgents ?? 2;
  const to = options.now;
  const from = new Date(to.getTime() - windowDays * 86_400_000);
  const outputs = listAgentOutputs(paths, { from, to: new Date(to.getTime() + 1) });
  const mentions = collectMentions(outputs);
  const warnings: string[] = [];
  const enhancer: CrossSignalsReport['enhancer'] = {
    enabled: options.llm !== undefined,
    applied: false,
  };
  const merged = new Map<
    string,
    { mentions: Mention[]; mergedFrom: string[]; explanation?: string }
  >();
  for (const [key, list] of mentions) merged.set(key, { mentions: [...list], mergedFrom: [] });

  if (options.llm && mentions.size > 1) {
    if (options.llm.model) enhancer.model = options.llm.model;
    const agentsOf = (list: readonly Mention[]) => new Set(list.map((m) => m.output.agent)).size;
    const terms = [...mentions.entries()]
      .sort((a, b) => agentsOf(b[1]) - agentsOf(a[1]) || a[0].localeCompare(b[0]))
      .slice(0, ENHANCER_MAX_TERMS)
      .map(([key]) => key)
      .sort();
    try {
      const merges = await askForMerges(options.llm, terms);
      let applied = 0;
      for (const merge of merges) {
        const target = merged.get(merge.into);
        if (!target) continue;
        for (const term of merge.from) {
          if (term === merge.into) continue;
          const other = merged.get(term);
          if (!other) continue;
          target.mentions.push(...other.mentions);
          target.mergedFrom.push(term, ...other.mergedFrom);
          merged.delete(term);
          applied++;
        }
        if (merge.reason) target.explanation = merge.reason;
      }
      enhancer.applied = true;
      enhancer.merges = applied;
    } catch (error) {
      warnings.push(
        `semantic enhancer failed, deterministic result kept: ${(error as Error).message}`,
      );
    }
  }

  const signals = [...merged.entries()]
    .map(([key, value]) => {
      const signal = signalOf(key, value.mentions);
      if (value.mergedFrom.length > 0) signal.mergedFrom = [...new Set(value.mergedFrom)].sort();
      if (value.explanation) signal.explanation = value.explanation;
      return signal;
    })
    .filter((signal) => signal.counts.agents >= minAgents)
    .sort(bySignalStrength);
  const date = isoDate(options.now);
  const report: CrossSignalsReport = {
    version: 1,
    date,
    generatedAt: options.now.toISOString(),
    window: { from: from.toISOString(), to: to.toISOString(), days: windowDays },
    minAgents,
    outputsScanned: outputs.length,
    signals,
    enhancer,
    warnings,
  };
  let relPath: string | null = null;
  if (options.write !== false) {
    relPath = `cross-signals/${date}.json`;
    if (!existsSync(paths.crossSignals)) mkdirSync(paths.crossSignals, { recursive: true });
    policyWrite(paths, relPath, `${JSON.stringify(report, null, 2)}\n`, {
      agent: 'curator',
      mode: 'overwrite',
      curator: true,
    });
  }
  return { ...report, relPath };
}
