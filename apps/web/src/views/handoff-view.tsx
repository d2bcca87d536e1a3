import type { LiveBus } from '../live.js';
import { useBus } from '../live.js';
import { href } from '../router.js';
import { Empty, Time, UrgencyBadge } from '../ui.js';

/** The tag `ctxbus handoff heartbeat|switch --publish` puts on its status items. */
export const HANDOFF_TAG = 'handoff';

/**
 * Model-switch handoffs (seed 003) as the bus knows them: one keyed status item per agent
 * workspace, the newest heartbeat or switch replacing the last.
 */
export function HandoffView({ bus }: { bus: LiveBus }) {
  useBus(bus);
  const handoffs = bus.cache.items({ tags: HANDOFF_TAG, type: 'status' });
  return (
    <section aria-labelledby="view-title">
      <h1 id="view-title" tabIndex={-1}>
        Handoff
      </h1>
      <p class="muted">
        Each agent workspace that publishes its handoff (
        <code>ctxbus handoff heartbeat --publish</code>, <code>switch --publish</code>) shows here
        with its newest state.
      </p>
      {handoffs.length === 0 ? (
        <Empty>No handoff published yet.</Empty>
      ) : (
        <ul class="items" data-testid="handoffs">
          {handoffs.map((item) => (
            <li key={item.id} class={`item item-${item.urgency}`} data-testid="handoff">
              <div class="item-head">
                <a href={href('item', item.id)} class="item-title">
                  {item.title}
                </a>
                <UrgencyBadge item={item} />
              </div>
              <p class="item-meta">
                <span>{item.key}</span>
                <span>by {item.source.runtime}</span>
                <Time iso={item.createdAt} />
              </p>
              <pre class="content">{item.content}</pre>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
