import type { ContextItem } from '@ctxbus/adapter-web';
import type { LagSample, LiveBus } from '../live.js';
import { useBus } from '../live.js';
import { Empty, TableScroll } from '../ui.js';

const BUCKETS_MS = [60_000, 300_000, 900_000, 3_600_000, 21_600_000];
const DAY_MS = 86_400_000;
const MAX_BUCKETS = 24;

interface Series {
  runtime: string;
  items: number[];
  tokens: number[];
}

/** Items and tokens per runtime per time bucket, over the span the page holds. */
export function bucketize(items: readonly ContextItem[], now: number) {
  const oldest = Math.min(...items.map((item) => Date.parse(item.createdAt)), now);
  const span = Math.max(now - oldest, 1);
  const size = BUCKETS_MS.find((ms) => span / ms <= MAX_BUCKETS) ?? DAY_MS;
  const count = Math.min(MAX_BUCKETS, Math.floor(span / size) + 1);
  const start = now - count * size;
  const byRuntime = new Map<string, Series>();
  for (const item of items) {
    const index = Math.floor((Date.parse(item.createdAt) - start) / size);
    if (index < 0 || index >= count) continue;
    let series = byRuntime.get(item.source.runtime);
    if (!series) {
      series = {
        runtime: item.source.runtime,
        items: Array(count).fill(0),
        tokens: Array(count).fill(0),
      };
      byRuntime.set(item.source.runtime, series);
    }
    series.items[index] = (series.items[index] ?? 0) + 1;
    series.tokens[index] = (series.tokens[index] ?? 0) + item.tokens;
  }
  return {
    size,
    count,
    start,
    series: [...byRuntime.values()].sort((a, b) => a.runtime.localeCompare(b.runtime)),
  };
}

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

function Bars({ values, label }: { values: readonly number[]; label: string }) {
  const max = Math.max(1, ...values);
  const width = 240;
  const height = 48;
  const bar = width / Math.max(1, values.length);
  return (
    <svg
      class="chart"
      viewBox={`0 0 ${width} ${height}`}
      role="img"
      aria-label={label}
      preserveAspectRatio="none"
    >
      {values.map((value, index) => {
        const h = (value / max) * (height - 2);
        return (
          <rect
            key={index}
            x={index * bar + 0.5}
            y={height - h}
            width={Math.max(1, bar - 1)}
            height={h}
          />
        );
      })}
    </svg>
  );
}

function sizeLabel(ms: number): string {
  return ms >= 3_600_000 ? `${ms / 3_600_000} h` : `${ms / 60_000} min`;
}

function LagChart({ samples }: { samples: readonly LagSample[] }) {
  if (samples.length === 0)
    return <Empty>No item has arrived on the stream since this page opened.</Empty>;
  const values = samples.map((sample) => sample.lagMs);
  const p50 = percentile(values, 50);
  const p99 = percentile(values, 99);
  return (
    <>
      <p data-testid="lag-summary">
        {samples.length} items arrived live: lag p50 {p50} ms, p99 {p99} ms, max{' '}
        {Math.max(...values)} ms.
      </p>
      <Bars
        values={values.slice(-60)}
        label={`Delivery lag of the last ${Math.min(60, values.length)} items, p50 ${p50} ms, p99 ${p99} ms`}
      />
    </>
  );
}

/** Pictures of the bus: who writes how much, and how fast changes reach this page. */
export function InsightsView({ bus }: { bus: LiveBus }) {
  useBus(bus);
  const items = bus.cache.items({ includeSuperseded: true });
  const { size, count, series } = bucketize(items, Date.now());
  return (
    <section aria-labelledby="view-title">
      <h1 id="view-title" tabIndex={-1}>
        Insights
      </h1>
      <h2>Items and tokens per runtime</h2>
      {series.length === 0 ? (
        <Empty>No items in the page yet.</Empty>
      ) : (
        <>
          <p class="muted">
            The last {count} periods of {sizeLabel(size)}, from the {items.length} items this page
            holds.
          </p>
          <TableScroll label="Items and tokens per runtime">
            <table data-testid="runtime-activity">
              <thead>
                <tr>
                  <th scope="col">Runtime</th>
                  <th scope="col">Items</th>
                  <th scope="col">Items over time</th>
                  <th scope="col">Tokens</th>
                  <th scope="col">Tokens over time</th>
                </tr>
              </thead>
              <tbody>
                {series.map((entry) => {
                  const itemTotal = entry.items.reduce((a, b) => a + b, 0);
                  const tokenTotal = entry.tokens.reduce((a, b) => a + b, 0);
                  return (
                    <tr key={entry.runtime}>
                      <th scope="row">{entry.runtime}</th>
                      <td>{itemTotal}</td>
                      <td>
                        <Bars
                          values={entry.items}
                          label={`${entry.runtime}: ${itemTotal} items over time`}
                        />
                      </td>
                      <td>{tokenTotal}</td>
                      <td>
                        <Bars
                          values={entry.tokens}
                          label={`${entry.runtime}: ${tokenTotal} tokens over time`}
                        />
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </TableScroll>
        </>
      )}
      <h2>Delivery lag</h2>
      <p class="muted">From an item's creation at the hub to its arrival in this page.</p>
      <LagChart samples={bus.lag} />
    </section>
  );
}
