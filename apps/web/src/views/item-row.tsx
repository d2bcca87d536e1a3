import type { ContextItem } from '@ctxbus/adapter-web';
import { visibleText } from '@ctxbus/core/contract';
import type { ComponentChildren } from 'preact';
import { href } from '../router.js';
import { Badge, Time, UrgencyBadge } from '../ui.js';

/**
 * A search passage: the hub marks the matched words `**so**` (Markdown); they are shown marked,
 * and everything else as the text it is (Preact escapes it: an item's `<b>` stays text).
 */
export function Passage({ text }: { text: string }) {
  const parts = text.split(/\*\*(.+?)\*\*/);
  // split keeps each captured word at an odd index.
  return (
    <>{parts.map((part, index) => (index % 2 === 1 ? <mark key={index}>{part}</mark> : part))}</>
  );
}

/** An item in a list: title (to its detail), urgency, type, writer, scope, tags, time. */
export function ItemRow({
  item,
  highlight,
  testId = 'feed-item',
  children,
}: {
  item: ContextItem;
  /** What to show under the title instead of the summary (a search's passage). */
  highlight?: string;
  testId?: string;
  /** Shown last (the content, say). */
  children?: ComponentChildren;
}) {
  return (
    <li class={`item item-${item.urgency}`} data-testid={testId} data-id={item.id}>
      <div class="item-head">
        <a href={href('item', item.id)} class="item-title">
          {visibleText(item.title)}
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
        {item.key && <span>{item.key}</span>}
        {item.relevanceTags.map((tag) => (
          <Badge key={tag} kind="tag">
            #{tag}
          </Badge>
        ))}
        <Time iso={item.createdAt} />
      </div>
      {children ?? (
        <p class="item-summary">
          {highlight === undefined ? (
            visibleText(item.summary)
          ) : (
            <Passage text={visibleText(highlight)} />
          )}
        </p>
      )}
    </li>
  );
}
