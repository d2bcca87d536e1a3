import type { CacheFilter, ContextItem, WebClient } from '@ctxbus/adapter-web';
import { CONTEXT_TYPES, SCOPES, URGENCIES } from '@ctxbus/core/contract';
import { useMemo, useState } from 'preact/hooks';
import type { LiveBus } from '../live.js';
import { useBus } from '../live.js';
import { Empty, ErrorBox, SelectField } from '../ui.js';
import { ItemRow } from './item-row.js';

interface Filters {
  scope: string;
  type: string;
  minUrgency: string;
  runtime: string;
  tags: string;
}

const NO_FILTERS: Filters = { scope: '', type: '', minUrgency: '', runtime: '', tags: '' };

/** The most rows the feed renders (the newest). */
const FEED_ROWS = 200;

function cacheFilter(filters: Filters): CacheFilter {
  const tags = filters.tags
    .split(',')
    .map((tag) => tag.trim())
    .filter(Boolean);
  return {
    ...(filters.scope && { scope: filters.scope as CacheFilter['scope'] }),
    ...(filters.type && { type: filters.type as CacheFilter['type'] }),
    ...(filters.minUrgency && { minUrgency: filters.minUrgency as CacheFilter['minUrgency'] }),
    ...(filters.runtime && { runtime: filters.runtime }),
    ...(tags.length > 0 && { tags }),
  };
}

/** The live feed: every change as it happens, filtered in the page; search asks the hub. */
export function FeedView({ bus, client }: { bus: LiveBus; client: WebClient }) {
  useBus(bus);
  const [filters, setFilters] = useState<Filters>(NO_FILTERS);
  const [query, setQuery] = useState('');
  const [search, setSearch] = useState<{
    query: string;
    results: { item: ContextItem; highlight: string }[];
  } | null>(null);
  const [error, setError] = useState<unknown>(null);
  const set = (field: keyof Filters) => (value: string) =>
    setFilters((current) => ({ ...current, [field]: value }));
  const items = bus.cache.items(cacheFilter(filters));
  const runtimes = useMemo(
    () => [...new Set(bus.cache.snapshot().map((item) => item.source.runtime))].sort(),
    [bus.cache.snapshot()],
  );

  const runSearch = async (event: Event) => {
    event.preventDefault();
    const text = query.trim();
    if (!text) {
      setSearch(null);
      return;
    }
    setError(null);
    try {
      const filter = cacheFilter(filters);
      const atLeast = filter.minUrgency ? URGENCIES.indexOf(filter.minUrgency) : 0;
      const response = await client.search({
        query: text,
        // The hub has no runtime filter for search: the page drops other runtimes' results.
        limit: filter.runtime ? 100 : 50,
        ...(filter.scope && { scope: filter.scope }),
        ...(filter.type && { type: filter.type }),
        ...(filter.tags && { tags: [filter.tags].flat() }),
        ...(atLeast > 0 && { urgency: URGENCIES.slice(atLeast) }),
      });
      const results = filter.runtime
        ? response.results.filter((result) => result.item.source.runtime === filter.runtime)
        : response.results;
      setSearch({ query: text, results: results.slice(0, 50) });
    } catch (failure) {
      setError(failure);
    }
  };

  return (
    <section aria-labelledby="view-title">
      <h1 id="view-title" tabIndex={-1}>
        Live feed
      </h1>
      <form class="filters" aria-label="Filters" onSubmit={runSearch}>
        {(
          [
            ['scope', 'Scope', SCOPES, 'any scope'],
            ['type', 'Type', CONTEXT_TYPES, 'any type'],
            ['minUrgency', 'Urgency at least', URGENCIES, 'any urgency'],
            ['runtime', 'Runtime', runtimes, 'any runtime'],
          ] as const
        ).map(([field, label, options, any]) => (
          <SelectField
            key={field}
            id={`filter-${field}`}
            label={label}
            options={options}
            any={any}
            value={filters[field]}
            onChange={set(field)}
          />
        ))}
        <div class="field">
          <label for="filter-tags">Tags</label>
          <input
            id="filter-tags"
            value={filters.tags}
            placeholder="ops, storage"
            onInput={(event) => set('tags')(event.currentTarget.value)}
          />
        </div>
        <div class="field field-grow">
          <label for="search">Search</label>
          <input
            id="search"
            type="search"
            value={query}
            placeholder="which database did we choose?"
            onInput={(event) => setQuery(event.currentTarget.value)}
          />
        </div>
        <button type="submit">Search</button>
        {search && (
          <button
            type="button"
            class="secondary"
            onClick={() => {
              setSearch(null);
              setQuery('');
            }}
          >
            Back to live
          </button>
        )}
      </form>
      <ErrorBox error={error} />
      {search ? (
        <>
          <p class="count" aria-live="polite" data-testid="feed-count">
            {search.results.length} results for “{search.query}”
          </p>
          <ol class="items" data-testid="search-results">
            {search.results.map((result) => (
              <ItemRow key={result.item.id} item={result.item} highlight={result.highlight} />
            ))}
          </ol>
        </>
      ) : (
        <>
          <p class="count" data-testid="feed-count">
            {items.length > FEED_ROWS
              ? `${items.length} items, the newest ${FEED_ROWS} shown (search or filter to reach the others)`
              : `${items.length} items`}
          </p>
          {items.length === 0 ? (
            <Empty>Nothing here yet: items appear as runtimes write them.</Empty>
          ) : (
            <ol class="items" data-testid="feed">
              {items.slice(0, FEED_ROWS).map((item) => (
                <ItemRow key={item.id} item={item} />
              ))}
            </ol>
          )}
        </>
      )}
    </section>
  );
}
