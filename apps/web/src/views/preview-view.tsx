import type { WebClient } from '@ctxbus/adapter-web';
import { useState } from 'preact/hooks';
import type { LiveBus } from '../live.js';
import { useBus } from '../live.js';
import { Empty, ErrorBox, TableScroll } from '../ui.js';

import { HUB_RELOAD_MS, useHubData, useThrottled } from '../use-hub-data.js';

/**
 * Exactly what a runtime gets right now: the hub's shared bundle for it (`GET
 * /api/context/shared`), its token count against the budget, what was trimmed, and the hash
 * that names this context. Private items of another runtime are not in it (they never leave
 * their runtime, not even to this page).
 */
export function PreviewView({
  bus,
  client,
  ownRuntime,
}: {
  bus: LiveBus;
  client: WebClient;
  ownRuntime: string;
}) {
  useBus(bus);
  // Reloaded as the bus changes, once a second at most.
  const changes = useThrottled(bus.cache.lastSeq, HUB_RELOAD_MS);
  const [runtime, setRuntime] = useState(ownRuntime);
  const [budget, setBudget] = useState('');
  const runtimes = useHubData(
    async () => (await client.capabilities()).runtimes.map((entry) => entry.id),
    [client],
  );
  const tokenBudget = Number(budget) > 0 ? Number(budget) : undefined;
  const bundle = useHubData(
    () => client.shared({ runtime, preview: true, ...(tokenBudget && { tokenBudget }) }),
    [client, runtime, tokenBudget, changes],
  );
  const choices = [...new Set([ownRuntime, ...(runtimes.data ?? [])])];
  const shared = bundle.data;
  return (
    <section aria-labelledby="view-title">
      <h1 id="view-title" tabIndex={-1}>
        What each runtime gets
      </h1>
      <p class="muted">
        Formatted for the runtime chosen, read as this dashboard's runtime may read it: that
        runtime's own private items never leave it, so they are not here.
      </p>
      <form
        class="filters"
        aria-label="Preview settings"
        onSubmit={(event) => event.preventDefault()}
      >
        <div class="field">
          <label for="preview-runtime">Runtime</label>
          <select
            id="preview-runtime"
            value={runtime}
            onChange={(event) => setRuntime(event.currentTarget.value)}
          >
            {choices.map((choice) => (
              <option key={choice} value={choice}>
                {choice}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="preview-budget">Token budget</label>
          <input
            id="preview-budget"
            type="number"
            min={1}
            placeholder="the runtime's default"
            value={budget}
            onInput={(event) => setBudget(event.currentTarget.value)}
          />
        </div>
      </form>
      <ErrorBox error={bundle.error} />
      {shared && shared.runtime === runtime && (
        <>
          <dl class="facts facts-inline" data-testid="preview-facts">
            <dt>Tokens</dt>
            <dd data-testid="preview-tokens">
              {shared.totalTokens} of {shared.effectiveBudget} (budget {shared.tokenBudget})
            </dd>
            <dt>Format</dt>
            <dd>{shared.format}</dd>
            <dt>Context hash</dt>
            <dd>
              <code data-testid="preview-hash">{shared.contextHash}</code>
            </dd>
            <dt>Items</dt>
            <dd>{shared.snapshot.itemRefs.length}</dd>
          </dl>
          <h2>Trimmed</h2>
          {shared.trim.trimmed ? (
            <TableScroll label="What was trimmed to fit the budget">
              <table data-testid="preview-trim">
                <caption>
                  {shared.trim.tokensBeforeTrim} tokens before trimming, {shared.totalTokens} after
                </caption>
                <thead>
                  <tr>
                    <th scope="col">Section</th>
                    <th scope="col">Entry</th>
                    <th scope="col">Action</th>
                  </tr>
                </thead>
                <tbody>
                  {shared.trim.actions.map((action, index) => (
                    <tr key={`${action.section}-${action.entry}-${index}`}>
                      <td>{action.section}</td>
                      <td>{action.entry ?? 'the whole section'}</td>
                      <td>{action.action}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableScroll>
          ) : (
            <Empty>Nothing: everything fits the budget.</Empty>
          )}
          {shared.warnings.length > 0 && (
            <ul class="warnings">
              {shared.warnings.map((warning) => (
                <li key={warning.message}>
                  {warning.type}: {warning.message}
                </li>
              ))}
            </ul>
          )}
          <h2>As the runtime reads it</h2>
          <TableScroll label={`The bundle for ${runtime}`} className="bundle">
            <pre data-testid="preview-formatted">{shared.formatted}</pre>
          </TableScroll>
        </>
      )}
    </section>
  );
}
