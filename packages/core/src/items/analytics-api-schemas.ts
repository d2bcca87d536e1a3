import { z } from 'zod';
import { queryInt } from '../shared/query-int.js';
import {
  contextTypeSchema,
  itemIdSchema,
  runtimeNameSchema,
  VISIBILITIES,
} from './context-item.js';

// Context analytics (seed 000, phase 3: "what context is used, what's stale"): which items each
// runtime was injected (in a shared-context bundle the hub served it), consumed (marked acted
// on) or found (returned by a search), per runtime and per UTC day; the items nobody used; and
// the stale ones. The rules are written here once, for the hub, the CLI and the dashboard.

/** The kinds of use the hub records, per item and runtime. */
export const USAGE_KINDS = ['injected', 'consumed', 'searched'] as const;
export type UsageKind = (typeof USAGE_KINDS)[number];

/** The longest window of daily usage the hub keeps and answers for, in days. */
export const ANALYTICS_MAX_WINDOW_DAYS = 90;
/** How many days without any use make an item stale, unless the query names another number. */
export const DEFAULT_STALE_DAYS = 14;

const DAY_MS = 86_400_000;

/** The UTC day (`YYYY-MM-DD`) of an instant: the bucket a use is counted in. */
export function usageDay(at: Date | number | string): string {
  return new Date(typeof at === 'string' ? Date.parse(at) : at).toISOString().slice(0, 10);
}

/** The `days` UTC days ending with the day of `now`, oldest first. */
export function windowDays(now: Date, days: number): string[] {
  const today = Date.parse(`${usageDay(now)}T00:00:00.000Z`);
  return Array.from({ length: days }, (_, index) => usageDay(today - (days - 1 - index) * DAY_MS));
}

/**
 * The stale rule: an item is stale when it is live and current (not expired, not superseded),
 * older than `staleDays`, and no runtime (or only the runtime the query names) injected,
 * consumed or found it in the last `staleDays` days. An item never used counts from its
 * creation. Returns the instant before which the last use (or the creation) must lie.
 */
export function staleCutoff(now: Date, staleDays: number): Date {
  return new Date(now.getTime() - staleDays * DAY_MS);
}

/** The stale rule in words, with its number of days (the API and the CLI print it). */
export function staleRuleText(staleDays: number): string {
  return `live, current items older than ${staleDays} days that no runtime injected, consumed or found in a search in the last ${staleDays} days`;
}

/** Whole days from `from` to `now` (rounded down). */
export function daysBetween(from: string, now: Date): number {
  return Math.max(0, Math.floor((now.getTime() - Date.parse(from)) / DAY_MS));
}

/** Most item ids one injection report may carry. */
export const MAX_REPORTED_INJECTIONS = 100;

/**
 * Body of `POST /api/analytics/injections`: the items a runtime put into a turn's context from
 * its own reads (a hook's `GET /api/context?since=`), which the hub cannot see being injected.
 */
export const injectionReportSchema = z.strictObject({
  itemIds: z
    .array(itemIdSchema)
    .min(1)
    .max(MAX_REPORTED_INJECTIONS)
    .meta({ description: "Items in the turn's context; repeated ids count once." }),
});

export const injectionReportResponseSchema = z.object({
  recorded: z.int().nonnegative().meta({
    description: 'Injections counted: the ids the caller may read, each once.',
  }),
});

/** Query of `GET /api/analytics`. */
export const analyticsQuerySchema = z.strictObject({
  window: queryInt(1, ANALYTICS_MAX_WINDOW_DAYS)
    .default(7)
    .meta({ description: 'Days of usage to count, ending today (UTC); 1 to 90.' }),
  runtime: runtimeNameSchema.optional().meta({
    description:
      "Only this runtime's use: its counts, the items it never used, the items it has not used lately.",
  }),
  limit: queryInt(1, 100)
    .default(10)
    .meta({ description: 'Most items in each list (top, never used, stale).' }),
  staleDays: queryInt(1, 365)
    .default(DEFAULT_STALE_DAYS)
    .meta({ description: 'Days without any use after which a live item is stale.' }),
});
export type AnalyticsQuery = z.output<typeof analyticsQuerySchema>;

const count = z.int().nonnegative();

export const usageCountsSchema = z.object({
  injected: count.meta({ description: 'Times the item was in a bundle the hub served.' }),
  consumed: count.meta({ description: 'Times a runtime marked it consumed.' }),
  searched: count.meta({ description: 'Times a search returned it.' }),
});
export type UsageCounts = z.infer<typeof usageCountsSchema>;

/** An item as the analytics name it: enough to recognise it and open it. */
export const analyticsItemSchema = z.object({
  id: itemIdSchema,
  seq: z.int().nonnegative(),
  type: contextTypeSchema,
  title: z.string(),
  sourceRuntime: runtimeNameSchema,
  visibility: z.enum(VISIBILITIES),
  createdAt: z.string(),
  superseded: z.boolean(),
});
export type AnalyticsItem = z.infer<typeof analyticsItemSchema>;

const runtimeUsageSchema = usageCountsSchema.extend({
  runtime: runtimeNameSchema,
  items: count.meta({ description: 'Distinct items this runtime used in the window.' }),
});

const dayUsageSchema = usageCountsSchema.extend({
  day: z.iso.date(),
  runtimes: z.array(usageCountsSchema.extend({ runtime: runtimeNameSchema })),
});

const unusedListSchema = <T extends z.ZodType>(entry: T) =>
  z.object({
    total: count.meta({ description: 'How many items match, listed or not.' }),
    items: z.array(entry),
  });

export const analyticsResponseSchema = z.object({
  generatedAt: z.string(),
  window: z.object({ days: z.int().positive(), from: z.iso.date(), to: z.iso.date() }),
  runtime: runtimeNameSchema.nullable(),
  totals: usageCountsSchema,
  runtimes: z
    .array(runtimeUsageSchema)
    .meta({ description: 'Use in the window, per runtime (the runtimes that used anything).' }),
  daily: z
    .array(dayUsageSchema)
    .meta({ description: 'Every day of the window, oldest first, with each runtime that day.' }),
  topItems: z
    .array(
      usageCountsSchema.extend({
        item: analyticsItemSchema,
        runtimes: z.array(runtimeNameSchema),
        lastUsedAt: z.string(),
      }),
    )
    .meta({ description: 'The items used most in the window (all kinds together).' }),
  neverUsed: unusedListSchema(z.object({ item: analyticsItemSchema, ageDays: count })).meta({
    description:
      'Live, current items no runtime (or the named one) ever injected, consumed or found; oldest first.',
  }),
  stale: unusedListSchema(
    z.object({
      item: analyticsItemSchema,
      lastUsedAt: z.string().nullable(),
      idleDays: count.meta({ description: 'Days since the last use (or the creation).' }),
    }),
  ).meta({ description: 'Items the stale rule flags, least recently used first.' }),
  staleRule: z.object({ days: z.int().positive(), text: z.string() }),
});
export type AnalyticsResponse = z.infer<typeof analyticsResponseSchema>;
