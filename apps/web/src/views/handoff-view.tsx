import { visibleText } from '@ctxbus/core/contract';
import type { LiveBus } from '../live.js';
import { useBus } from '../live.js';
import { Empty } from '../ui.js';
import { ItemRow } from './item-row.js';

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
            <ItemRow key={item.id} item={item} testId="handoff">
              <pre class="content">{visibleText(item.content)}</pre>
            </ItemRow>
          ))}
        </ul>
      )}
    </section>
  );
}
