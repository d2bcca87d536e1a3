import type { ContextItem } from '../items/context-item.js';
import type { ContextFormatName } from '../routing/capabilities.js';
import type { Task } from '../tasks/tasks.js';
import type {
  BuiltContext,
  BuiltSection,
  ContextFormatter,
  ContextSection,
} from './context-builder.js';
import { buildContext } from './context-builder.js';
import {
  hasMarkdownOrLines,
  inertMarkdown,
  markdownFormatter,
  plainLine,
  plainTextFormatter,
} from './formatters.js';
import type {
  SharedCandidates,
  SharedContextLimits,
  SharedContextViewer,
  SharedSectionId,
} from './shared-context.js';
import { SHARED_TRIM_ORDER, selectSharedContext } from './shared-context.js';

/** A problem a resolver worked around instead of failing, e.g. Markdown it had to flatten. */
export interface ResolverWarning {
  type: 'flattened' | 'unsupported';
  message: string;
}

/** How one runtime type wants its context: a formatter plus its default budget. */
export interface Resolver {
  runtime: string;
  description: string;
  formatter: ContextFormatter;
  defaultTokenBudget: number;
  safetyMargin: number;
  /** Whether the bundle carries the full items behind each section (structured clients). */
  includeItems: boolean;
  warnings(sections: readonly ContextSection[]): ResolverWarning[];
  /** How one item reaches this runtime (`resolveItem`). */
  item: ItemDelivery;
}

/**
 * Seed 000's per-item resolution: `resolve(item, runtime) -> {format, content, injection}`,
 * for a runtime that injects each new item as it arrives (a stream, a push). `injection` names
 * where ctxbus's adapter for that runtime puts it.
 */
export interface ResolvedContext {
  format: 'markdown' | 'text' | 'json';
  content: string;
  injection: ItemInjection;
  /** The item resolved, and the runtime it was resolved for. */
  itemId: string;
  runtime: string;
}

/**
 * Where an adapter puts injected context: Claude Code's hook `additionalContext` (kept in the
 * transcript), before OpenClaw's prompt (`prependContext`), or handed to a structured client
 * (the web UI), which renders it itself.
 */
export type ItemInjection = 'hook-additional-context' | 'prepend-context' | 'structured';

export interface ItemDelivery {
  format: ResolvedContext['format'];
  injection: ItemInjection;
  render(item: ContextItem): string;
}

const noWarnings = (): ResolverWarning[] => [];

/** Context is data: every resolved item names the runtime it came from. */
const origin = (item: ContextItem) => `from ${item.source.runtime}, ${item.type}`;

const markdownItem: ItemDelivery = {
  format: 'markdown',
  injection: 'hook-additional-context',
  render: (item) =>
    `## Context Update: ${plainLine(item.title)}\n_${origin(item)}_\n\n${inertMarkdown(item.content || item.summary)}`,
};

/** How a runtime wants its context: a format and a default budget (capabilities.yaml `context`). */
export interface RuntimeContextSpec {
  format: ContextFormatName;
  /** Tokens a bundle may use when the caller does not say (default: the format's). */
  tokenBudget?: number;
}

/** Each format's resolver, as any runtime asking for it gets it (its `runtime` is the format). */
const FORMATS: Readonly<Record<ContextFormatName, Resolver>> = {
  markdown: {
    runtime: 'markdown',
    description: 'Markdown, injected by hooks or read via MCP (Claude Code)',
    formatter: markdownFormatter,
    defaultTokenBudget: 4_000,
    safetyMargin: 0.05,
    includeItems: false,
    warnings: noWarnings,
    item: markdownItem,
  },
  text: {
    runtime: 'text',
    description: 'terse plain text for a chat assistant (OpenClaw on Telegram)',
    formatter: plainTextFormatter,
    defaultTokenBudget: 2_000,
    safetyMargin: 0.1,
    includeItems: false,
    warnings(sections) {
      const flattened = sections.reduce(
        (count, section) =>
          count +
          section.entries.filter(
            (entry) => hasMarkdownOrLines(entry.summary) || hasMarkdownOrLines(entry.title),
          ).length,
        0,
      );
      return flattened === 0
        ? []
        : [
            {
              type: 'flattened',
              message: `${flattened} entries had Markdown or line breaks, flattened to one line of plain text`,
            },
          ];
    },
    item: {
      format: 'text',
      injection: 'prepend-context',
      render: (item) => `[${origin(item)}] ${plainLine(item.summary || item.title)}`,
    },
  },
  structured: {
    runtime: 'structured',
    description: 'structured sections with their items, plus Markdown (a web UI)',
    formatter: markdownFormatter,
    defaultTokenBudget: 4_000,
    safetyMargin: 0.05,
    includeItems: true,
    warnings: noWarnings,
    item: {
      format: 'json',
      injection: 'structured',
      render: (item) => JSON.stringify(item),
    },
  },
};

/**
 * The runtimes ctxbus ships adapters for, and the format each gets when capabilities.yaml
 * does not say (`runtimes.<name>.context`). Any other runtime gets `DEFAULT_RESOLVER` unless
 * its entry names a format: a new runtime is a YAML entry, not code here.
 */
export const DEFAULT_RUNTIME_CONTEXT: Readonly<Record<string, RuntimeContextSpec>> = {
  'claude-code': { format: 'markdown' },
  openclaw: { format: 'text' },
  web: { format: 'structured' },
};

/** A format's resolver for `runtime`, with the budget its spec gives. */
function resolverFromSpec(runtime: string, spec: RuntimeContextSpec): Resolver {
  const format = FORMATS[spec.format];
  return {
    ...format,
    runtime,
    defaultTokenBudget: spec.tokenBudget ?? format.defaultTokenBudget,
  };
}

/** The built-in runtimes' resolvers (their default specs). */
export const RESOLVERS: Readonly<Record<string, Resolver>> = Object.fromEntries(
  Object.entries(DEFAULT_RUNTIME_CONTEXT).map(([runtime, spec]) => [
    runtime,
    resolverFromSpec(runtime, spec),
  ]),
);

/** Runtimes with a resolver of their own (the others get `DEFAULT_RESOLVER`). */
export const KNOWN_RUNTIMES: readonly string[] = Object.keys(RESOLVERS).sort();

/**
 * The format of every runtime without a resolver of its own (runtime names are open: any
 * runtime declared in capabilities.yaml gets context): plain Markdown, the default budget of
 * 4,000 tokens with a 5% safety margin, no items. Its `runtime` is `default`; the bundle still
 * names the runtime that asked.
 */
export const DEFAULT_RESOLVER: Resolver = {
  ...FORMATS.markdown,
  runtime: 'default',
  description: 'plain Markdown, for runtimes without a resolver of their own',
};

/**
 * The resolver for `runtime`: the spec capabilities.yaml declares for it (`declared`), else the
 * built-in default for the runtimes ctxbus ships adapters for, else `DEFAULT_RESOLVER`.
 * Never throws.
 */
export function getResolver(runtime: string, declared?: RuntimeContextSpec): Resolver {
  if (declared) return resolverFromSpec(runtime, declared);
  // Own properties only: `constructor` or `__proto__` must not find Object's.
  return (Object.hasOwn(RESOLVERS, runtime) ? RESOLVERS[runtime] : undefined) ?? DEFAULT_RESOLVER;
}

/**
 * One item as `runtime` should inject it (seed 000: `resolver.resolve(item, currentRuntime)`,
 * then `injectContext(resolved)`): Markdown with a `## Context Update:` heading for Claude Code
 * and runtimes without a resolver, one plain line for OpenClaw, the item as JSON for the web.
 */
export function resolveItem(
  item: ContextItem,
  runtime: string,
  declared?: RuntimeContextSpec,
): ResolvedContext {
  const { format, injection, render } = getResolver(runtime, declared).item;
  return { format, content: render(item), injection, itemId: item.id, runtime };
}

export interface SharedContextRequest {
  runtime: string;
  viewer: SharedContextViewer;
  now: Date;
  tokenBudget?: number;
  limits?: Partial<SharedContextLimits>;
  /** The team's non-terminal tasks from the task store (see `SelectOptions.tasks`). */
  tasks?: readonly Task[];
  /** The runtime's `context` in capabilities.yaml, when it declares one. */
  context?: RuntimeContextSpec;
  /** The team's runtimes and their trust (see `SelectOptions.runtimes`). */
  runtimes?: readonly { id: string; trust: string }[];
  /** The frequently-used-documents candidates' uses (see `SelectOptions.documentUses`). */
  documentUses?: ReadonlyMap<string, number>;
}

/** One entry of a section under seed 000's names: its text and the items behind it. */
export type SeedEntry = BuiltSection['entries'][number];

/**
 * Seed 000's named fields of the minimum shared context, taken from the built (and trimmed)
 * sections: the same entries as `sections`, under the seed's names.
 */
export interface SeedSharedFields {
  identity: { teamId: string; runtime: string; entries: SeedEntry[] };
  activeTasks: SeedEntry[];
  blockedItems: SeedEntry[];
  recentDecisions: SeedEntry[];
  /**
   * Seed 000's `currentFocus: string`: the focus text alone (the item's content, or its summary
   * where the budget compacted the entry), one line per entry ('' when none). The labelled
   * bullet is only in the formatted text.
   */
  currentFocus: string;
  recentInteractionSummaries: SeedEntry[];
  threadSummaries: SeedEntry[];
  projectContext: SeedEntry[];
  /** Seed 000's `frequently_accessed_docs (pinned references)`, ranked by use. */
  frequentlyAccessedDocs: SeedEntry[];
}

export interface SharedContextBundle extends Omit<BuiltContext, 'text'>, SeedSharedFields {
  runtime: string;
  formatted: string;
  /**
   * Markdown for every runtime (seed 000's field): `formatted` itself for Markdown runtimes;
   * for the others the same sections rendered as Markdown within the same budget.
   */
  formattedMarkdown: string;
  warnings: ResolverWarning[];
  /** The items behind the sections, for structured clients (web). */
  items?: ContextItem[];
}

/** The focus entries' own text: the body of a full entry, the summary of a compacted one. */
function focusText(built: readonly BuiltSection[], sections: readonly ContextSection[]): string {
  const source = sections.find((section) => section.id === 'currentFocus')?.entries ?? [];
  const byId = new Map(source.map((entry) => [entry.id, entry]));
  return (built.find((section) => section.id === 'currentFocus')?.entries ?? [])
    .map((entry) => {
      const from = byId.get(entry.id);
      if (!from) return entry.text;
      return entry.mode === 'full' ? from.body : from.summary;
    })
    .join('\n');
}

/** Seed 000's named fields from the built sections (the entries, not copies of the items). */
function seedFields(
  built: readonly BuiltSection[],
  sections: readonly ContextSection[],
  request: SharedContextRequest,
): SeedSharedFields {
  const entries = (id: SharedSectionId) =>
    built.find((section) => section.id === id)?.entries ?? [];
  return {
    identity: {
      teamId: request.viewer.teamId,
      runtime: request.runtime,
      entries: entries('identity'),
    },
    activeTasks: entries('activeTasks'),
    blockedItems: entries('blockedItems'),
    recentDecisions: entries('recentDecisions'),
    currentFocus: focusText(built, sections),
    recentInteractionSummaries: entries('recentInteractions'),
    threadSummaries: entries('threadSummaries'),
    projectContext: entries('projectContext'),
    frequentlyAccessedDocs: entries('frequentlyAccessedDocs'),
  };
}

/**
 * Builds the shared context for one runtime from each section's candidates (see
 * `sharedCandidateQueries`): selection, the one builder, and that runtime's format and budget.
 * Deterministic for equal inputs.
 */
export function resolveSharedContext(
  candidates: SharedCandidates,
  request: SharedContextRequest,
): SharedContextBundle {
  const resolver = getResolver(request.runtime, request.context);
  const sections = selectSharedContext(candidates, {
    viewer: request.viewer,
    now: request.now,
    ...(request.limits ? { limits: request.limits } : {}),
    ...(request.tasks ? { tasks: request.tasks } : {}),
    ...(request.runtimes ? { runtimes: request.runtimes } : {}),
    ...(request.documentUses ? { documentUses: request.documentUses } : {}),
  });
  const options = {
    tokenBudget: request.tokenBudget ?? resolver.defaultTokenBudget,
    safetyMargin: resolver.safetyMargin,
    trimOrder: SHARED_TRIM_ORDER,
    header: {
      title: 'Shared context (ctxbus)',
      // The format may be another runtime's (a preview); what is visible is always the viewer's.
      lines: [
        request.runtime === request.viewer.runtime
          ? `Team ${request.viewer.teamId}, for ${request.runtime}.`
          : `Team ${request.viewer.teamId}, as ${request.viewer.runtime} sees it, formatted for ${request.runtime}.`,
      ],
    },
  };
  const built = buildContext(sections, resolver.formatter, options);
  const { text, ...rest } = built;
  const bundle: SharedContextBundle = {
    ...rest,
    ...seedFields(built.sections, sections, request),
    runtime: request.runtime,
    formatted: text,
    formattedMarkdown:
      built.format === 'markdown' ? text : buildContext(sections, markdownFormatter, options).text,
    warnings: resolver.warnings(sections),
  };
  if (resolver.includeItems) {
    const byId = new Map<string, ContextItem>();
    for (const list of Object.values(candidates)) for (const item of list) byId.set(item.id, item);
    bundle.items = built.snapshot.itemRefs.flatMap((ref) => {
      const item = byId.get(ref.id);
      return item ? [item] : [];
    });
  }
  return bundle;
}
