import type { WebClient } from '@ctxbus/adapter-web';
import type { AnalyticsItem, AnalyticsResponse } from '@ctxbus/core/contract';
import { visibleText } from '@ctxbus/core/contract';
import { useState } from 'preact/hooks';
import type { LiveBus } from '../live.js';
import { href } from '../router.js';
import { Badge, Empty, ErrorBox, SelectField, TableScroll, Time } from '../ui.js';
import { HUB_RELOAD_MS, useHubData, useThrottled } from '../use-hub-data.js';

/** Bundles served and searches are no stream events: the report also reloads on this period. */
export const ANALYTICS_REFRESH_MS = 10_000;
const WINDOWS = ['7', '30', '90'] as const;

type Counts = { injected: number; consumed: number; searched: number };

function CountCells({ row }: { row: Counts }) {
  return (
    <>
      <td>{row.injected}</td>
      <td>{row.consumed}</td>
      <td>{row.searched}</td>
    </>
  );
}

const COUNT_HEADS = ['Injected', 'Consumed', 'Searched'];

function ItemLink({ item }: { item: AnalyticsItem }) {
  return (
    <>
      <a href={href('item', item.id)}>{visibleText(item.title)}</a>{' '}
      <Badge kind="type">{item.type}</Badge> <span class="muted small">{item.sourceRuntime}</span>
      {item.visibility === 'private' && (
        <>
          {' '}
          <Badge kind="visibility">private</Badge>
        </>
      )}
      {item.superseded && <span class="muted small"> (superseded)</span>}
    </>
  );
}

/** One bar per day: its uses of all kinds, with the numbers in the label and the table. */
function DailyBars({ report }: { report: AnalyticsResponse }) {
  const values = report.daily.map((day) => day.injected + day.consumed + day.searched);
  const max = Math.max(1, ...values);
  const width = 240;
  const height = 48;
  const bar = width / Math.max(1, values.length);
  return (
    <svg
      class="chart"
      viewBox={`0 0 ${width} ${height}`}
      role="img"
      aria-label={`Uses per day from ${report.window.from} to ${report.window.to}: ${values.join(', ')}`}
      preserveAspectRatio="none"
    >
      {values.map((value, index) => {
        const h = (value / max) * (height - 2);
        return (
          <rect
            key={report.daily[index]?.day}
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

function RuntimeTable({ report }: { report: AnalyticsResponse }) {
  if (report.runtimes.length === 0) return <Empty>No use recorded in this window.</Empty>;
  return (
    <TableScroll label="Use per runtime">
      <table data-testid="analytics-runtimes">
        <thead>
          <tr>
            <th scope="col">Runtime</th>
            {COUNT_HEADS.map((head) => (
              <th key={head} scope="col">
                {head}
              </th>
            ))}
            <th scope="col">Items</th>
          </tr>
        </thead>
        <tbody>
          {report.runtimes.map((row) => (
            <tr key={row.runtime} data-runtime={row.runtime}>
              <th scope="row">{row.runtime}</th>
              <CountCells row={row} />
              <td>{row.items}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroll>
  );
}

function DailyTable({ report }: { report: AnalyticsResponse }) {
  return (
    <TableScroll label="Use per day">
      <table data-testid="analytics-daily">
        <thead>
          <tr>
            <th scope="col">Day (UTC)</th>
            {COUNT_HEADS.map((head) => (
              <th key={head} scope="col">
                {head}
              </th>
            ))}
            <th scope="col">By runtime (injected/consumed/searched)</th>
          </tr>
        </thead>
        <tbody>
          {[...report.daily].reverse().map((day) => (
            <tr key={day.day} data-day={day.day}>
              <th scope="row">{day.day}</th>
              <CountCells row={day} />
              <td class="small">
                {day.runtimes
                  .map((row) => `${row.runtime} ${row.injected}/${row.consumed}/${row.searched}`)
                  .join(', ')}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroll>
  );
}

function TopItems({ report }: { report: AnalyticsResponse }) {
  if (report.topItems.length === 0) return <Empty>No item was used in this window.</Empty>;
  return (
    <TableScroll label="Most used items">
      <table data-testid="analytics-top">
        <thead>
          <tr>
            <th scope="col">Item</th>
            {COUNT_HEADS.map((head) => (
              <th key={head} scope="col">
                {head}
              </th>
            ))}
            <th scope="col">Runtimes</th>
            <th scope="col">Last used</th>
          </tr>
        </thead>
        <tbody>
          {report.topItems.map((row) => (
            <tr key={row.item.id} data-id={row.item.id}>
              <th scope="row">
                <ItemLink item={row.item} />
              </th>
              <CountCells row={row} />
              <td>{row.runtimes.join(', ')}</td>
              <td>
                <Time iso={row.lastUsedAt} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroll>
  );
}

function UnusedList({
  testId,
  total,
  entries,
  empty,
}: {
  testId: string;
  total: number;
  entries: { item: AnalyticsItem; note: string }[];
  empty: string;
}) {
  if (total === 0) return <Empty>{empty}</Empty>;
  return (
    <>
      <ul class="items usage-list" data-testid={testId}>
        {entries.map((entry) => (
          <li key={entry.item.id} data-id={entry.item.id}>
            <ItemLink item={entry.item} /> <span class="muted small">{entry.note}</span>
          </li>
        ))}
      </ul>
      {entries.length < total && (
        <p class="muted small">
          {entries.length} of {total} shown.
        </p>
      )}
    </>
  );
}

/** Context analytics: what each runtime was injected, consumed and found; never used; stale. */
export function AnalyticsView({ bus, client }: { bus: LiveBus; client: WebClient }) {
  const [days, setDays] = useState<string>('7');
  const [runtime, setRuntime] = useState('');
  const changes = useThrottled(bus.cache.lastSeq, HUB_RELOAD_MS);
  const report = useHubData(
    () =>
      client.call('contextAnalytics', {
        query: { window: Number(days), limit: 20, ...(runtime && { runtime }) },
      }),
    [client, days, runtime, changes],
    ANALYTICS_REFRESH_MS,
  );
  const data = report.data;
  const runtimes = [
    ...new Set([
      ...(data?.runtimes.map((row) => row.runtime) ?? []),
      ...(runtime ? [runtime] : []),
    ]),
  ].sort();
  return (
    <section aria-labelledby="view-title">
      <h1 id="view-title" tabIndex={-1}>
        Analytics
      </h1>
      <p class="muted">
        Which items each runtime was injected (in a bundle the hub served it, or among the changes
        its hooks put into a turn), consumed or found in a search; the items nobody used, and the
        stale ones.
      </p>
      <form class="filters" onSubmit={(event) => event.preventDefault()}>
        <SelectField
          id="analytics-window"
          label="Days"
          options={WINDOWS}
          value={days}
          onChange={setDays}
        />
        <SelectField
          id="analytics-runtime"
          label="Runtime"
          options={runtimes}
          any="every runtime"
          value={runtime}
          onChange={setRuntime}
        />
      </form>
      <ErrorBox error={report.error} />
      {!data ? (
        <p aria-busy="true">Loading…</p>
      ) : (
        <div data-testid="analytics-report" data-window={data.window.days}>
          <p data-testid="analytics-totals">
            {data.window.from} to {data.window.to}
            {data.runtime ? `, ${data.runtime} only` : ''}: {data.totals.injected} injected,{' '}
            {data.totals.consumed} consumed, {data.totals.searched} searched.
          </p>
          <h2>Per runtime</h2>
          <RuntimeTable report={data} />
          <h2>Per day</h2>
          <DailyBars report={data} />
          <DailyTable report={data} />
          <h2>Most used</h2>
          <TopItems report={data} />
          <h2>Never used ({data.neverUsed.total})</h2>
          <UnusedList
            testId="analytics-never-used"
            total={data.neverUsed.total}
            empty="Every live item was used."
            entries={data.neverUsed.items.map((row) => ({
              item: row.item,
              note: `${row.ageDays} days old`,
            }))}
          />
          <h2>Stale ({data.stale.total})</h2>
          <p class="muted small" data-testid="analytics-stale-rule">
            Stale: {data.staleRule.text}.
          </p>
          <UnusedList
            testId="analytics-stale"
            total={data.stale.total}
            empty="Nothing is stale."
            entries={data.stale.items.map((row) => ({
              item: row.item,
              note: `idle ${row.idleDays} days${row.lastUsedAt ? '' : ', never used'}`,
            }))}
          />
        </div>
      )}
    </section>
  );
}
