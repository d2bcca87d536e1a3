import type { CacheFilter, ContextItem, WebClient } from '@ctxbus/adapter-web';
import { CONTEXT_TYPES, SCOPES, URGENCIES } from '@ctxbus/core/contract';
import { useMemo, useState } from 'preact/hooks';
import type { LiveBus } from '../live.js';
import { useBus } from '../live.js';
import { href } from '../router.js';
import { Badge, Empty, ErrorBox, Time, UrgencyBadge } from '../ui.js';

interface Filters {
  scope: string;
  type: string;
  minUrgency: string;
  runtime: string;
  tags: string;
}

const NO_FILTERS: Filters = { scope: '', type: '', minUrgency: '', runtime: '', tags: '' };

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

export function ItemRow({ item, highlight }: { item: ContextItem; highlight?: string }) {
  return (
    <li class={`item item-${item.urgency}`} data-testid="feed-item" data-id={item.id}>
      <div class="item-head">
        <a href={href('item', item.id)} class="item-title">
          {item.title}
        </a>
        <UrgencyBadge item={item} />
      </div>
      <div class="item-meta">
        <Badge kind="type">{item.type}</Badge>
        <span>{item.source.runtime}</span>
        <span>
          {item.scope}
          {item.scopeKey ? ` ${item.scopeKey}` : ''}
        </span>
        {item.relevanceTags.map((tag) => (
          <Badge key={tag} kind="tag">
            #{tag}
          </Badge>
        ))}
        <Time iso={item.createdAt} />
      </div>
      <p class="item-summary">{highlight ?? item.summary}</p>
    </li>
  );
}

function Select(props: {
  label: string;
  value: string;
  options: readonly string[];
  any: string;
  onChange: (value: string) => void;
}) {
  const id = `filter-${props.label.toLowerCase().replace(/\W+/g, '-')}`;
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <select
        id={id}
        value={props.value}
        onChange={(event) => props.onChange(event.currentTarget.value)}
      >
        <option value="">{props.any}</option>
        {props.options.map((option) => (
          <option key={option} value={option}>
            {option}
          </option>
        ))}
      </select>
    </div>
  );
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
      const response = await client.search({
        query: text,
        limit: 50,
        ...(filter.scope && { scope: filter.scope }),
        ...(filter.type && { type: filter.type }),
        ...(filter.tags && { tags: [filter.tags].flat() }),
      });
      setSearch({ query: text, results: response.results });
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
        <Select
          label="Scope"
          value={filters.scope}
          options={SCOPES}
          any="any scope"
          onChange={set('scope')}
        />
        <Select
          label="Type"
          value={filters.type}
          options={CONTEXT_TYPES}
          any="any type"
          onChange={set('type')}
        />
        <Select
          label="Urgency at least"
          value={filters.minUrgency}
          options={URGENCIES}
          any="any urgency"
          onChange={set('minUrgency')}
        />
        <Select
          label="Runtime"
          value={filters.runtime}
          options={runtimes}
          any="any runtime"
          onChange={set('runtime')}
        />
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
            {items.length} items
          </p>
          {items.length === 0 ? (
            <Empty>Nothing here yet: items appear as runtimes write them.</Empty>
          ) : (
            <ol class="items" data-testid="feed">
              {items.slice(0, 200).map((item) => (
                <ItemRow key={item.id} item={item} />
              ))}
            </ol>
          )}
        </>
      )}
    </section>
  );
}
