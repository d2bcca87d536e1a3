import type { ContextItem } from '@ctxbus/adapter-web';
import {
  BLACKBOARD_TAG,
  itemValue,
  parseBlackboardKey,
  RESOURCE_TAG,
  visibleText,
} from '@ctxbus/core/contract';
import type { LiveBus } from '../live.js';
import { useBus } from '../live.js';
import { href } from '../router.js';
import { Empty, TableScroll, Time } from '../ui.js';

/** A value as one readable line, cut at `max` characters. */
function valueText(item: ContextItem, max = 160): string {
  const value = itemValue(item);
  const text = visibleText(typeof value === 'string' ? value : JSON.stringify(value));
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function EntryTable({
  label,
  rows,
}: {
  label: string;
  rows: { name: string; item: ContextItem }[];
}) {
  return (
    <TableScroll label={label}>
      <table data-testid="board-entries">
        <thead>
          <tr>
            <th scope="col">Entry</th>
            <th scope="col">Value</th>
            <th scope="col">By</th>
            <th scope="col">Written</th>
          </tr>
        </thead>
        <tbody>
          {rows.map(({ name, item }) => (
            <tr key={item.id} data-entry={name}>
              <th scope="row">
                <a href={href('item', item.id)}>{name}</a>
              </th>
              <td>
                <code>{valueText(item)}</code>
              </td>
              <td>
                {item.source.runtime}
                {item.source.agentId ? `/${item.source.agentId}` : ''}
              </td>
              <td>
                <Time iso={item.createdAt} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroll>
  );
}

/**
 * Seed 004's shared layers as the bus holds them: each thread's or space's blackboard with the
 * latest value of every entry (a rewrite supersedes the last), and the persistent resources.
 */
export function BoardsView({ bus }: { bus: LiveBus }) {
  useBus(bus);
  const boards = new Map<string, { name: string; item: ContextItem }[]>();
  for (const item of bus.cache.items({ tags: BLACKBOARD_TAG })) {
    const parsed = parseBlackboardKey(item.key);
    if (!parsed || item.relevanceTags.includes('removed')) continue;
    const board = `${parsed.board.scope} ${parsed.board.id}`;
    boards.set(board, [...(boards.get(board) ?? []), { name: parsed.entry, item }]);
  }
  const resources = bus.cache
    .items({ tags: RESOURCE_TAG })
    .filter((item) => item.key?.startsWith('resource/'))
    .map((item) => ({ name: (item.key ?? '').slice('resource/'.length), item }));
  return (
    <section aria-labelledby="view-title">
      <h1 id="view-title" tabIndex={-1}>
        Boards
      </h1>
      <h2>Blackboards</h2>
      {boards.size === 0 ? (
        <Empty>No blackboard entries: runs write them with the client's Blackboard.</Empty>
      ) : (
        [...boards.entries()]
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([board, rows]) => (
            <section
              key={board}
              aria-label={`Blackboard of ${board}`}
              data-testid="board"
              data-board={board}
            >
              <h3>{board}</h3>
              <EntryTable
                label={`Entries of ${board}`}
                rows={rows.sort((a, b) => a.name.localeCompare(b.name))}
              />
            </section>
          ))
      )}
      <h2>Persistent resources</h2>
      {resources.length === 0 ? (
        <Empty>No persistent resources yet.</Empty>
      ) : (
        <EntryTable label="Persistent resources" rows={resources} />
      )}
    </section>
  );
}
