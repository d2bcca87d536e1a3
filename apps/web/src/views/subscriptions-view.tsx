import type { DeadLetterInfo, Subscription, WebClient } from '@ctxbus/adapter-web';
import { useState } from 'preact/hooks';
import type { LiveBus } from '../live.js';
import { useBus } from '../live.js';
import { Badge, Empty, ErrorBox, TableScroll, Time } from '../ui.js';
import { HUB_RELOAD_MS, useHubData, useThrottled } from '../use-hub-data.js';

function health(subscription: Subscription): { kind: string; text: string } {
  if (subscription.retry)
    return { kind: 'attention', text: `retrying (${subscription.retry.attempts})` };
  if (subscription.deadLettered > 0) return { kind: 'blocking', text: 'dead letters' };
  return { kind: 'online', text: 'healthy' };
}

function DeadLetters({ client, id }: { client: WebClient; id: string }) {
  const letters = useHubData<DeadLetterInfo[]>(() => client.deadLetters(id), [client, id]);
  if (letters.error) return <ErrorBox error={letters.error} />;
  if (!letters.data) return <p aria-busy="true">Loading…</p>;
  if (letters.data.length === 0) return <Empty>No dead letters.</Empty>;
  return (
    <TableScroll label="Dead letters">
      <table data-testid="dead-letters">
        <thead>
          <tr>
            <th scope="col">Sequence</th>
            <th scope="col">Event</th>
            <th scope="col">Item</th>
            <th scope="col">Attempts</th>
            <th scope="col">Last error</th>
            <th scope="col">Gave up</th>
          </tr>
        </thead>
        <tbody>
          {letters.data.map((letter) => (
            <tr key={letter.seq}>
              <td>{letter.seq}</td>
              <td>{letter.event}</td>
              <td>
                <code>{letter.itemId}</code>
              </td>
              <td>{letter.attempts}</td>
              <td>{letter.lastError}</td>
              <td>
                <Time iso={letter.failedAt} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroll>
  );
}

/** This runtime's subscriptions and how their deliveries fare. */
export function SubscriptionsView({
  bus,
  client,
  runtime,
}: {
  bus: LiveBus;
  client: WebClient;
  runtime: string;
}) {
  useBus(bus);
  const changes = useThrottled(bus.cache.lastSeq, HUB_RELOAD_MS);
  const [open, setOpen] = useState<string | null>(null);
  const subscriptions = useHubData(() => client.subscriptions(), [client, changes]);
  return (
    <section aria-labelledby="view-title">
      <h1 id="view-title" tabIndex={-1}>
        Subscriptions
      </h1>
      <p class="muted">
        The subscriptions of runtime {runtime} (a subscription is visible to its own runtime only).
      </p>
      <ErrorBox error={subscriptions.error} />
      {subscriptions.data && subscriptions.data.length === 0 && <Empty>No subscriptions.</Empty>}
      {subscriptions.data && subscriptions.data.length > 0 && (
        <TableScroll label="Subscriptions">
          <table data-testid="subscriptions">
            <thead>
              <tr>
                <th scope="col">Label</th>
                <th scope="col">Delivery</th>
                <th scope="col">Health</th>
                <th scope="col">Delivered</th>
                <th scope="col">Dead letters</th>
                <th scope="col">Cursor</th>
                <th scope="col">Since</th>
              </tr>
            </thead>
            <tbody>
              {subscriptions.data.map((subscription) => {
                const state = health(subscription);
                return (
                  <tr key={subscription.id} data-testid="subscription" data-id={subscription.id}>
                    <td>
                      {subscription.label ?? subscription.id}
                      {subscription.retry && (
                        <div class="muted small">{subscription.retry.lastError}</div>
                      )}
                    </td>
                    <td>
                      {subscription.delivery}
                      {subscription.endpoint && (
                        <div class="muted small">{subscription.endpoint}</div>
                      )}
                    </td>
                    <td>
                      <Badge kind={state.kind}>{state.text}</Badge>
                    </td>
                    <td>{subscription.delivered}</td>
                    <td>
                      {subscription.deadLettered > 0 ? (
                        <button
                          type="button"
                          class="link"
                          aria-expanded={open === subscription.id}
                          onClick={() => setOpen(open === subscription.id ? null : subscription.id)}
                        >
                          {subscription.deadLettered}
                        </button>
                      ) : (
                        0
                      )}
                    </td>
                    <td>{subscription.cursor}</td>
                    <td>
                      <Time iso={subscription.createdAt} />
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </TableScroll>
      )}
      {open && <DeadLetters client={client} id={open} />}
    </section>
  );
}
