import { z } from 'zod';
import { CtxbusError } from '../shared/errors.js';
import { parseOrThrow } from '../shared/validation.js';
import type { BlackboardEntryKind } from './blackboard-contract.js';
import type { ExecutionStep, JsonValue, RunContext } from './run-context.js';
import { jsonBytes } from './run-context.js';

/**
 * Seed 004's ContextExporter: pushes data up a layer. When a run finishes (or a configured
 * trigger fires) a child run's exports go to its parent run, a root run's to the blackboard,
 * and the blackboard entries named for it on to persistent resources. What is exported is the
 * run's declared exports plus the variables an auto-export list names, minus what a filter
 * excludes. The writers are injected (`@ctxbus/client`'s Blackboard implements both on the bus),
 * so this stays pure.
 */

/** Where the exporter writes a root run's exports. */
export interface BlackboardWriter {
  set(
    entry: string,
    value: JsonValue,
    options?: { kind?: BlackboardEntryKind; runId?: string },
  ): Promise<unknown>;
}

/** Where blackboard entries become persistent resources. */
export interface ResourceWriter {
  put(name: string, value: JsonValue, options?: { title?: string }): Promise<unknown>;
}

export const EXPORT_LAYERS = ['parent', 'blackboard', 'persistent'] as const;
export type ExportLayer = (typeof EXPORT_LAYERS)[number];

const JSON_TYPES = ['string', 'number', 'boolean', 'null', 'array', 'object'] as const;
type JsonType = (typeof JSON_TYPES)[number];

/** A name, or a pattern where `*` stands for any run of characters (`draft-*`, `*`). */
const namePatternSchema = z
  .string()
  .regex(/^[A-Za-z0-9*][A-Za-z0-9._*/-]*$/, 'a name pattern is letters, digits, . _ - / and *');

export const exportTriggerSchema = z.discriminatedUnion('on', [
  z.strictObject({ on: z.literal('run-completed') }),
  z.strictObject({
    on: z.literal('step-completed'),
    /** Only after a step of this name (any step when absent). */
    step: z.string().min(1).optional(),
    /** Only after a step that ended so (default: completed). */
    status: z.enum(['completed', 'failed', 'skipped']).optional(),
  }),
]);
export type ExportTrigger = z.infer<typeof exportTriggerSchema>;

/**
 * Excludes a value from the layers it names (all when absent) when every condition it gives
 * holds: its name matches one of `names`, it is larger than `largerThanBytes`, its JSON type
 * is one of `valueTypes`.
 */
export const exportFilterSchema = z
  .strictObject({
    layers: z.array(z.enum(EXPORT_LAYERS)).min(1).optional(),
    names: z.array(namePatternSchema).min(1).optional(),
    largerThanBytes: z.int().nonnegative().optional(),
    valueTypes: z.array(z.enum(JSON_TYPES)).min(1).optional(),
  })
  .refine(
    (filter) =>
      filter.names !== undefined ||
      filter.largerThanBytes !== undefined ||
      filter.valueTypes !== undefined,
    'a filter needs names, largerThanBytes or valueTypes (it would exclude everything)',
  );
export type ExportFilter = z.infer<typeof exportFilterSchema>;

/** Seed 004's ExportConfiguration. */
export const exportConfigurationSchema = z.strictObject({
  /** Variables a child run hands to its parent besides its declared exports. */
  autoExportToParent: z.array(namePatternSchema).default([]),
  /** Variables a root run puts on the blackboard besides its declared exports. */
  autoExportToBlackboard: z.array(namePatternSchema).default([]),
  /** Blackboard entries (written by this exporter) that also become persistent resources. */
  autoExportToPersistent: z.array(namePatternSchema).default([]),
  /** When `handle` flushes a run (default: when it completes). */
  exportTriggers: z.array(exportTriggerSchema).default([{ on: 'run-completed' }]),
  exportFilters: z.array(exportFilterSchema).default([]),
  /** Prefix of the resource name an entry is persisted under (`research/` -> research/<entry>). */
  resourcePrefix: z
    .string()
    .regex(/^([A-Za-z0-9][A-Za-z0-9._-]*\/)*$/, 'a resource prefix is path segments ending in /')
    .default(''),
});
export type ExportConfiguration = z.input<typeof exportConfigurationSchema>;
type ParsedConfiguration = z.output<typeof exportConfigurationSchema>;

export type ExportEvent =
  | { type: 'run-completed' }
  | { type: 'step-completed'; step: ExecutionStep };

export interface ExportTargets {
  blackboard?: BlackboardWriter;
  resources?: ResourceWriter;
}

export interface ExportReport {
  toParent: string[];
  toBlackboard: string[];
  toPersistent: string[];
  /** What a filter kept back, and from which layer. */
  filtered: { name: string; layer: ExportLayer }[];
}

function patternMatches(pattern: string, name: string): boolean {
  if (!pattern.includes('*')) return pattern === name;
  const escaped = pattern.replace(/[.+?^${}()|[\]\\/-]/g, '\\$&').replaceAll('*', '.*');
  return new RegExp(`^${escaped}$`).test(name);
}

function jsonType(value: JsonValue): JsonType {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value as JsonType;
}

export class ContextExporter {
  readonly config: ParsedConfiguration;

  constructor(config: ExportConfiguration = {}) {
    this.config = parseOrThrow(exportConfigurationSchema, config, 'export configuration');
  }

  /** Whether a filter keeps `name` out of `layer`. */
  excluded(name: string, value: JsonValue, layer: ExportLayer): boolean {
    return this.config.exportFilters.some(
      (filter) =>
        (filter.layers === undefined || filter.layers.includes(layer)) &&
        (filter.names === undefined ||
          filter.names.some((pattern) => patternMatches(pattern, name))) &&
        (filter.largerThanBytes === undefined || jsonBytes(value) > filter.largerThanBytes) &&
        (filter.valueTypes === undefined || filter.valueTypes.includes(jsonType(value))),
    );
  }

  /** A run's declared exports plus the variables `autoList` names, in a stable order. */
  private candidates(run: RunContext, autoList: readonly string[]): [string, JsonValue][] {
    const out = new Map(Object.entries(run.exported()));
    for (const [name, value] of Object.entries(run.intermediateVars)) {
      if (!out.has(name) && autoList.some((pattern) => patternMatches(pattern, name))) {
        out.set(name, value);
      }
    }
    return [...out.entries()];
  }

  private select(
    candidates: [string, JsonValue][],
    layer: ExportLayer,
    report: ExportReport,
  ): [string, JsonValue][] {
    return candidates.filter(([name, value]) => {
      if (!this.excluded(name, value, layer)) return true;
      report.filtered.push({ name, layer });
      return false;
    });
  }

  /** Copies a child run's exports into its parent's variables. */
  exportToParent(child: RunContext, report: ExportReport = emptyReport()): ExportReport {
    if (!child.parent) {
      throw new CtxbusError('conflict', `run ${child.runId} has no parent run to export to`);
    }
    const selected = this.select(
      this.candidates(child, this.config.autoExportToParent),
      'parent',
      report,
    );
    for (const [name, value] of selected) {
      child.exportToParent(name, value);
      report.toParent.push(name);
    }
    return report;
  }

  /** Writes a root run's exports to the blackboard, one entry per name. */
  async exportToBlackboard(
    run: RunContext,
    blackboard: BlackboardWriter,
    report: ExportReport = emptyReport(),
  ): Promise<ExportReport> {
    const selected = this.select(
      this.candidates(run, this.config.autoExportToBlackboard),
      'blackboard',
      report,
    );
    for (const [name, value] of selected) {
      await blackboard.set(name, value, { kind: 'result', runId: run.runId });
      report.toBlackboard.push(name);
    }
    return report;
  }

  /** Makes a blackboard entry a persistent resource (seed 004: "agent decides"). */
  async exportToPersistent(
    entry: { name: string; value: JsonValue },
    resources: ResourceWriter,
    report: ExportReport = emptyReport(),
  ): Promise<ExportReport> {
    if (this.select([[entry.name, entry.value]], 'persistent', report).length === 0) return report;
    const name = `${this.config.resourcePrefix}${entry.name}`;
    await resources.put(name, entry.value, { title: entry.name });
    report.toPersistent.push(name);
    return report;
  }

  /**
   * Pushes a finished run up one layer: a child's exports to its parent; a root's to the
   * blackboard, then those in `autoExportToPersistent` on to the resources.
   */
  async flush(run: RunContext, targets: ExportTargets = {}): Promise<ExportReport> {
    const report = emptyReport();
    if (run.parent) return this.exportToParent(run, report);
    if (!targets.blackboard) {
      throw new CtxbusError(
        'validation_failed',
        `run ${run.runId} is a root run: flushing it needs a blackboard to write to`,
      );
    }
    await this.exportToBlackboard(run, targets.blackboard, report);
    const persist = report.toBlackboard.filter((name) =>
      this.config.autoExportToPersistent.some((pattern) => patternMatches(pattern, name)),
    );
    if (persist.length > 0 && !targets.resources) {
      throw new CtxbusError(
        'validation_failed',
        `autoExportToPersistent names ${persist.join(', ')}: flushing needs a resource writer`,
      );
    }
    const values = new Map(this.candidates(run, this.config.autoExportToBlackboard));
    for (const name of persist) {
      // Filtered for the blackboard already; the persistent layer's filters still apply.
      await this.exportToPersistent(
        { name, value: values.get(name) as JsonValue },
        targets.resources as ResourceWriter,
        report,
      );
    }
    return report;
  }

  /** Whether `event` is one of the configured triggers. */
  triggeredBy(event: ExportEvent): boolean {
    return this.config.exportTriggers.some((trigger) => {
      if (trigger.on !== event.type) return false;
      if (trigger.on === 'step-completed' && event.type === 'step-completed') {
        return (
          (trigger.step === undefined || trigger.step === event.step.name) &&
          (trigger.status ?? 'completed') === event.step.status
        );
      }
      return true;
    });
  }

  /** Flushes the run when `event` is a configured trigger; null when it is not. */
  async handle(
    event: ExportEvent,
    run: RunContext,
    targets: ExportTargets = {},
  ): Promise<ExportReport | null> {
    return this.triggeredBy(event) ? this.flush(run, targets) : null;
  }
}

function emptyReport(): ExportReport {
  return { toParent: [], toBlackboard: [], toPersistent: [], filtered: [] };
}
