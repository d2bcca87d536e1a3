import type {
  AnalyticsItem,
  AnalyticsQuery,
  AnalyticsResponse,
  ContextItem,
  SharedContextResponse,
  UsageCounts,
  Viewer,
} from '@ctxbus/core';
import { daysBetween, staleCutoff, staleRuleText, windowDays } from '@ctxbus/core';
import type { DailyUsageRow, UsageWindow } from '@ctxbus/store';
import type { HubServices } from '../hub-services.js';
import { implement } from '../route-definition.js';

// GET /api/analytics: context analytics for the caller's team, as the caller may see it
// (private items only its own runtime's). The uses come from the hub's usage recorder:
// injected = in a shared-context bundle served to that runtime (`GET /api/context/shared`
// for its own runtime, not a preview) or reported by a hook that put it into a turn's context
// (`POST /api/analytics/injections`), consumed = `POST /api/context/:id/consume`, searched =
// returned by `POST /api/context/search`.

/** The item ids a bundle carries (its entries' references). */
export function bundleItemIds(bundle: SharedContextResponse): string[] {
  const entries = [
    ...bundle.identity.entries,
    ...bundle.sections.flatMap((section) => section.entries),
  ];
  return entries.flatMap((entry) => entry.refs.map((ref) => ref.id));
}

function analyticsItem(item: ContextItem): AnalyticsItem {
  return {
    id: item.id,
    seq: item.seq,
    type: item.type,
    title: item.title,
    sourceRuntime: item.source.runtime,
    visibility: item.visibility,
    createdAt: item.createdAt,
    superseded: item.supersededBy !== null,
  };
}

const counts = (row: UsageCounts): UsageCounts => ({
  injected: row.injected,
  consumed: row.consumed,
  searched: row.searched,
});

function add(total: UsageCounts, row: UsageCounts): void {
  total.injected += row.injected;
  total.consumed += row.consumed;
  total.searched += row.searched;
}

const zero = (): UsageCounts => ({ injected: 0, consumed: 0, searched: 0 });

/** Every day of the window (zero-filled), each with its runtimes. */
function dailySeries(days: readonly string[], rows: readonly DailyUsageRow[]) {
  return days.map((day) => {
    const runtimes = rows
      .filter((row) => row.day === day)
      .map((row) => ({ runtime: row.runtime, ...counts(row) }));
    const total = zero();
    for (const row of runtimes) add(total, row);
    return { day, ...total, runtimes };
  });
}

/** The report: the window's counts, the most used items, the never-used and stale ones. */
export async function analyticsReport(
  services: HubServices,
  viewer: Viewer,
  query: AnalyticsQuery,
): Promise<AnalyticsResponse> {
  // This hub's uses so far are counted (other hubs' within their flush interval).
  await services.usage.flush();
  const now = services.clock();
  const days = windowDays(now, query.window);
  const window: UsageWindow = {
    fromDay: days[0] ?? '',
    toDay: days.at(-1) ?? '',
    ...(query.runtime !== undefined && { runtime: query.runtime }),
  };
  const { store } = services;
  const unused = { now: now.toISOString(), limit: query.limit, ...window };
  const [daily, runtimes, top, neverUsed, stale] = await Promise.all([
    store.dailyUsage(viewer, window),
    store.runtimeUsage(viewer, window),
    store.topUsedItems(viewer, { ...window, limit: query.limit }),
    store.unusedItems(viewer, unused),
    store.unusedItems(viewer, {
      ...unused,
      idleBefore: staleCutoff(now, query.staleDays).toISOString(),
    }),
  ]);
  const totals = zero();
  for (const row of runtimes) add(totals, row);
  return {
    generatedAt: now.toISOString(),
    window: { days: query.window, from: window.fromDay, to: window.toDay },
    runtime: query.runtime ?? null,
    totals,
    runtimes: runtimes.map((row) => ({ runtime: row.runtime, items: row.items, ...counts(row) })),
    daily: dailySeries(days, daily),
    topItems: top.map((row) => ({
      item: analyticsItem(row.item),
      ...counts(row),
      runtimes: row.runtimes,
      lastUsedAt: row.lastUsedAt,
    })),
    neverUsed: {
      total: neverUsed.total,
      items: neverUsed.items.map((row) => ({
        item: analyticsItem(row.item),
        ageDays: daysBetween(row.item.createdAt, now),
      })),
    },
    stale: {
      total: stale.total,
      items: stale.items.map((row) => ({
        item: analyticsItem(row.item),
        lastUsedAt: row.lastUsedAt,
        idleDays: daysBetween(row.lastUsedAt ?? row.item.createdAt, now),
      })),
    },
    staleRule: { days: query.staleDays, text: staleRuleText(query.staleDays) },
  };
}

/** Counts the reported items the caller may read as injected into its context, each once. */
async function recordReportedInjections(
  services: HubServices,
  viewer: Viewer,
  itemIds: readonly string[],
): Promise<number> {
  const unique = [...new Set(itemIds)];
  const readable = await Promise.all(unique.map((id) => services.store.getItem(viewer, id)));
  const ids = readable.flatMap((item) => (item ? [item.id] : []));
  services.usage.record(viewer, 'injected', ids);
  return ids.length;
}

export const analyticsRoutes = [
  implement('contextAnalytics', {
    summary: 'Context analytics: what each runtime was injected, consumed and found',
    description:
      "Seed 000's context analytics (what context is used, what's stale), for the caller's team; private items count and show only for their own runtime. Uses per runtime and per UTC day over the last `window` days: **injected** (the item was in a shared-context bundle the hub served to that runtime: `GET /api/context/shared` for the token's own runtime, not with `preview=true`; or a hook reported it in a turn's context: `POST /api/analytics/injections`), **consumed** (`POST /api/context/:id/consume`, each call) and **searched** (returned by `POST /api/context/search`). `topItems`: the most used items in the window. `neverUsed`: live, current items no runtime ever injected, consumed or found. `stale`: live, current items older than `staleDays` (default 14) that no runtime used in the last `staleDays` days, least recently used first. With `runtime`, every figure is that runtime's use only. Uses are batched in memory and written every few seconds; this hub's are written before it answers. Per-day counts are kept 90 days; an item's totals as long as the item.",
    tags: ['context'],
    statuses: { 200: 'The report.' },
    async handler({ query, viewer, services }) {
      return { status: 200, body: await analyticsReport(services, viewer, query) };
    },
  }),
  implement('reportInjections', {
    summary: "Count items a runtime put into a turn's context as injected",
    description:
      "For reads the hub cannot tell are injections: a hook reads what changed (`GET /api/context?since=`) and puts only some of it into the turn's context (its window and budget decide). After building the turn, the adapter reports the items that went in, and each counts as one injection by the caller's runtime in the analytics (`GET /api/analytics`), on the hub's day. Ids the caller may not read (another team's, another runtime's private items, unknown or expired ones) are not counted. The shared bundle is counted when it is served (`GET /api/context/shared`) and is not reported again.",
    tags: ['context'],
    statuses: { 200: 'What was counted.' },
    async handler({ body, viewer, services }) {
      const recorded = await recordReportedInjections(services, viewer, body.itemIds);
      return { status: 200, body: { recorded } };
    },
  }),
];
