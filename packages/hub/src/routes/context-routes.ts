import type { ContextItem, ListOptions, ListQuery, SharedSectionId, Viewer } from '@ctxbus/core';
import {
  CtxbusError,
  DEFAULT_SHARED_LIMITS,
  documentFilters,
  FREQUENT_DOC_USES,
  frequentDocsCandidateLimit,
  frequentDocsWindow,
  parseWriteRequest,
  prepareParsedItem,
  resolveItem,
  resolveSharedContext,
  sharedCandidateQueries,
  sharedTaskQueries,
} from '@ctxbus/core';
import type { HubServices } from '../hub-services.js';
import { implement } from '../route-definition.js';
import { searchContext } from '../search/hybrid-search.js';
import { bundleItemIds } from './analytics-route.js';
import { assertNoConflictTakeover, raiseConflicts } from './conflicts.js';
import { forgetKey } from './forget-key.js';
import { itemPageChars, withinPageBudget } from './page-budget.js';
import { assertNoTaskStatusForgery } from './task-status-guard.js';

function notFound(id: string): CtxbusError {
  return new CtxbusError(
    'not_found',
    `no item ${id} (or it expired, or it is not visible to you)`,
    {
      details: { id },
    },
  );
}

/** The earliest date-time `since` may name (0001-01-01T00:00:00Z). */
const EARLIEST_SINCE_MS = Date.parse('0001-01-01T00:00:00Z');
/** The last time a Date holds (+275760-09-13): a larger Unix time is no date. */
const MAX_DATE_MS = 8.64e15;

/**
 * An ISO date-time's Unix time, NaN when it names no calendar day: Date.parse takes any day up
 * to 31 and rolls it over (2026-11-31 is read as 1 December, 2026-02-30 as 2 March).
 */
function calendarDateMs(text: string): number {
  const [, year, month, day] = /^(\d{4})-(\d\d)-(\d\d)/.exec(text) ?? [];
  const lastDay = new Date(0);
  lastDay.setUTCFullYear(Number(year), Number(month), 0);
  const valid = Number(month) >= 1 && Number(month) <= 12 && Number(day) >= 1;
  return valid && Number(day) <= lastDay.getUTCDate() ? Date.parse(text) : Number.NaN;
}

/** Maps the list query (wire names) onto the store filter. */
export function listOptionsFromQuery(query: ListQuery): ListOptions {
  let sinceSeq: number | undefined;
  let createdAfter: string | undefined;
  if (query.since !== undefined) {
    // Seed 000's `since={timestamp}`: 13 digits and more, up to the last date a time can
    // name, are a Unix time in milliseconds (no store reaches that many items); any other
    // digits are a sequence number.
    const digits = /^\d+$/.test(query.since) ? Number(query.since) : null;
    const unixMs =
      digits !== null && query.since.length >= 13 && digits <= MAX_DATE_MS ? digits : null;
    if (unixMs === null && digits !== null) sinceSeq = digits;
    else {
      const ms = unixMs ?? calendarDateMs(query.since);
      if (Number.isNaN(ms)) {
        throw new CtxbusError(
          'validation_failed',
          `query.since: "${query.since}" is not a valid date-time`,
        );
      }
      // Year 0 (and before) has no ISO form PostgreSQL reads: refused on every store alike.
      if (ms < EARLIEST_SINCE_MS) {
        throw new CtxbusError(
          'validation_failed',
          `query.since: "${query.since}" is before 0001-01-01T00:00:00Z`,
        );
      }
      createdAfter = new Date(ms).toISOString();
    }
  }
  const options: ListOptions = {
    limit: query.limit,
    ...(query.scope && { scopes: query.scope }),
    ...(query.scopeKey !== undefined && { scopeKey: query.scopeKey }),
    ...(query.scopeKeyPrefix !== undefined && { scopeKeyPrefix: query.scopeKeyPrefix }),
    ...(query.type && { types: query.type }),
    ...(query.tags && { tags: query.tags }),
    ...(query.minUrgency !== undefined && { minUrgency: query.minUrgency }),
    ...(query.runtime !== undefined && { sourceRuntime: query.runtime }),
    ...(sinceSeq !== undefined && { sinceSeq }),
    ...(createdAfter !== undefined && { createdAfter }),
    ...(query.before !== undefined && { beforeSeq: query.before }),
    ...(query.key !== undefined && { key: query.key }),
    ...(query.keyPrefix !== undefined && { keyPrefix: query.keyPrefix }),
    ...(query.unconsumed !== undefined && { unconsumed: query.unconsumed }),
    ...(query.includeSuperseded !== undefined && { includeSuperseded: query.includeSuperseded }),
  };
  return options;
}

const asArray = <T>(value: T | T[] | undefined): T[] | undefined =>
  value === undefined ? undefined : Array.isArray(value) ? value : [value];

/** The context format and budget capabilities.yaml declares for `runtime`, if any. */
function declaredContext(services: HubServices, runtime: string) {
  const runtimes = services.capabilities.matrix().runtimes;
  const context = Object.hasOwn(runtimes, runtime) ? runtimes[runtime]?.context : undefined;
  return context ? { context } : {};
}

/**
 * The team's most used documents the viewer may read (seed 000's frequently accessed docs),
 * ranked by the uses of the whole UTC days before today (see core's `frequent-documents`).
 */
function frequentDocuments(services: HubServices, viewer: Viewer) {
  const now = services.clock();
  return services.store.mostUsedItems(viewer, {
    ...frequentDocsWindow(now),
    kinds: FREQUENT_DOC_USES,
    filters: documentFilters(),
    now: now.toISOString(),
    limit: frequentDocsCandidateLimit(DEFAULT_SHARED_LIMITS),
  });
}

/**
 * What the shared bundle is built from, read at once: each section's candidates, the open
 * tasks (newest first, see sharedTaskQueries) and the most used documents with their uses.
 */
async function sharedInputs(services: HubServices, viewer: Viewer) {
  const queries = sharedCandidateQueries(DEFAULT_SHARED_LIMITS);
  const sections = Object.keys(queries) as SharedSectionId[];
  const [lists, taskLists, documents] = await Promise.all([
    Promise.all(
      sections.map(async (section) =>
        (
          await Promise.all(
            queries[section].map((options) => services.store.listItems(viewer, options)),
          )
        ).flat(),
      ),
    ),
    Promise.all(
      sharedTaskQueries(DEFAULT_SHARED_LIMITS).map((options) =>
        services.store.listTasks(viewer.teamId, { ...options, order: 'newest' }),
      ),
    ),
    frequentDocuments(services, viewer),
  ]);
  const candidates = Object.fromEntries(
    sections.map((section, index) => [section, lists[index] ?? []]),
  ) as Record<SharedSectionId, ContextItem[]>;
  candidates.frequentlyAccessedDocs = documents.map((row) => row.item);
  return {
    candidates,
    tasks: [...new Map(taskLists.flat().map((task) => [task.id, task])).values()],
    documentUses: new Map(documents.map((row) => [row.item.id, row.uses])),
  };
}

export const contextRoutes = [
  implement('writeContext', {
    summary: 'Write one item or a batch',
    description:
      'Body: one item, an array of items, or `{ "items": [...] }` (at most 500). A batch is stored whole or not at all. An item whose `id` was already written with the same content is returned with status "existing" and is not stored twice; the same id with other content is a 409. Secrets in the text are redacted before storage (see `redactions`).',
    tags: ['context'],
    parseBody: parseWriteRequest,
    statuses: {
      200: 'Every item already existed (idempotent retry).',
      201: 'At least one item was created.',
    },
    async handler({ body, viewer: writer, services }) {
      const now = services.clock();
      const inputs = body as unknown as ReturnType<typeof parseWriteRequest>;
      const prepared = inputs.map((input, index) => {
        const item = prepareParsedItem(input, writer, { now });
        if (item.expiresAt !== null && Date.parse(item.expiresAt) <= now.getTime()) {
          const field = inputs.length > 1 ? `body.items[${index}].expiresAt` : 'body.expiresAt';
          throw new CtxbusError('validation_failed', `${field}: ${item.expiresAt} is in the past`);
        }
        return item;
      });
      await assertNoTaskStatusForgery(services, writer, prepared);
      await assertNoConflictTakeover(services, writer, prepared);
      const outcomes = await services.store.writeItems(prepared);
      const created = outcomes.some((outcome) => outcome.status === 'created');
      if (created) {
        services.feed.committed(outcomes);
        await raiseConflicts(services, outcomes);
      }
      return {
        status: created ? 201 : 200,
        body: {
          items: outcomes.map((outcome) => outcome.item),
          results: outcomes.map(({ item, status }) => ({ id: item.id, seq: item.seq, status })),
        },
      };
    },
  }),
  implement('listContext', {
    summary: 'List items, newest first',
    description:
      "Filters combine with AND; list values are comma-separated and match any. Superseded and expired items are left out. A page holds at most about 4 Mi characters of item text (at least one item), so it may hold fewer than `limit`: page on with `before` = `nextBefore` until it is null. `totalTokens` is the sum of the items' o200k token counts.",
    tags: ['context'],
    statuses: { 200: 'The items.' },
    async handler({ query, viewer, services }) {
      const options = listOptionsFromQuery(query);
      const listed = await services.store.listItems(viewer, options);
      const { page: items, cut } = withinPageBudget(listed, itemPageChars);
      const last = items.at(-1);
      return {
        status: 200,
        body: {
          items,
          totalTokens: items.reduce((sum, item) => sum + item.tokens, 0),
          nextBefore: (cut || listed.length === options.limit) && last ? last.seq : null,
        },
      };
    },
  }),
  implement('forgetKey', {
    summary: "Remove a key's value and its history",
    description:
      "Removes the value a key holds and every earlier value of it that the caller sees (its team's; private ones only of its own runtime): what deletes a persistent resource or a blackboard entry. A marker item tagged `removed` (no content, the same scope, visibility and tags) supersedes the live value, so streams, subscriptions and webhooks get the removal as `context-superseded` and `context-added`; then every value up to the marker, the marker too, expires at once: lists, search and `includeSuperseded` reads no longer show them, and the lifecycle sweep takes them out (into the archive only with retention mode `archive`). A value written after the removal is a new one. 404 when the caller sees no value of the key.",
    tags: ['context'],
    statuses: { 200: 'What was removed.' },
    async handler({ query, viewer, services }) {
      await assertNoConflictTakeover(services, viewer, [{ key: query.key }]);
      return { status: 200, body: await forgetKey(services, viewer, query.key) };
    },
  }),
  implement('searchContext', {
    summary: 'Ranked search: full text, or hybrid with vectors',
    description:
      'Natural-language questions work: stop words are dropped and any remaining term may match. Full-text candidates (BM25 over title, content, summary and tags) are re-ranked by how much of the question they cover and by their neighbours in the same thread (`source.threadId`). With an embedding provider configured (`ctxbus serve --embeddings-url`), the question is also embedded and the nearest items by cosine are fused with the full-text ranking by reciprocal rank (`mode: "hybrid"`); `mode` and `vector` say what was used. `highlight` is the best passage with matched words in **.',
    tags: ['context'],
    statuses: { 200: 'Results, best first.' },
    async handler({ body, viewer, services }) {
      const scopes = asArray(body.scope);
      const types = asArray(body.type);
      const urgencies = asArray(body.urgency);
      const response = await searchContext(services, viewer, {
        query: body.query,
        limit: body.limit,
        ...(scopes && { scopes }),
        ...(types && { types }),
        ...(body.tags && { tags: body.tags }),
        ...(urgencies && { urgencies }),
        ...(body.scopeKey !== undefined && { scopeKey: body.scopeKey }),
        ...(body.includeSuperseded !== undefined && { includeSuperseded: body.includeSuperseded }),
      });
      services.usage.record(
        viewer,
        'searched',
        response.results.map((result) => result.item.id),
      );
      return { status: 200, body: response };
    },
  }),
  implement('sharedContext', {
    summary: 'The shared context bundle for a runtime',
    description:
      "Seed 000's minimum shared context (identity, active tasks, blocked items, recent decisions, current focus, recent activity, threads, project context, frequently used documents), built deterministically within the token budget and formatted for the runtime: Markdown for claude-code, terse text for openclaw, sections with items plus Markdown for web, plain Markdown for any other runtime (the default resolver). The same items and budget always give the same `contextHash`. A bundle for the token's own runtime counts as an injection of its items in the analytics (`GET /api/analytics`) unless `preview=true`.",
    tags: ['context'],
    statuses: { 200: 'The bundle.' },
    async handler({ query, viewer, services }) {
      const runtime = query.runtime ?? viewer.runtime;
      const { candidates, tasks, documentUses } = await sharedInputs(services, viewer);
      const bundle = resolveSharedContext(candidates, {
        documentUses,
        runtime,
        viewer,
        tasks,
        now: services.clock(),
        ...declaredContext(services, runtime),
        runtimes: Object.entries(services.capabilities.matrix().runtimes).map(([id, entry]) => ({
          id,
          trust: entry.trust,
        })),
        ...(query.tokenBudget !== undefined && { tokenBudget: query.tokenBudget }),
      });
      // An injection: the bundle of the caller's own runtime, unless it only looks (a preview).
      if (runtime === viewer.runtime && query.preview !== true) {
        services.usage.record(viewer, 'injected', bundleItemIds(bundle));
      }
      return { status: 200, body: bundle };
    },
  }),
  implement('getContextItem', {
    summary: 'One item by id',
    tags: ['context'],
    statuses: { 200: 'The item.' },
    async handler({ params, viewer, services }) {
      const item = await services.store.getItem(viewer, params.id);
      if (!item) throw notFound(params.id);
      return { status: 200, body: { item } };
    },
  }),
  implement('resolveContextItem', {
    summary: 'One item as a runtime should inject it (seed 000: resolve, then inject)',
    description:
      "`{format, content, injection}`: Markdown under a `## Context Update:` heading for Claude Code (and runtimes without a resolver of their own), one plain line for OpenClaw, the item as JSON for the web; the content names the runtime the item came from. Resolves for the caller's runtime unless `runtime` names another; the caller must be able to read the item.",
    tags: ['context'],
    statuses: { 200: 'The resolved item.' },
    async handler({ params, query, viewer, services }) {
      const item = await services.store.getItem(viewer, params.id);
      if (!item) throw notFound(params.id);
      const runtime = query.runtime ?? viewer.runtime;
      const { context } = declaredContext(services, runtime);
      return { status: 200, body: { resolved: resolveItem(item, runtime, context) } };
    },
  }),
  implement('consumeContextItem', {
    summary: 'Mark an item consumed by the calling runtime',
    description:
      'Idempotent: consuming twice records one consumption on the item (the analytics, `GET /api/analytics`, count each call).',
    tags: ['context'],
    statuses: { 200: 'The item after consumption.' },
    async handler({ params, viewer, services }) {
      const item = await services.store.consumeItem(viewer, params.id);
      if (!item) throw notFound(params.id);
      services.usage.record(viewer, 'consumed', [item.id]);
      services.feed.notify();
      return { status: 200, body: { item } };
    },
  }),
];
