import type { ContextItem, WebClient } from '@ctxbus/adapter-web';
import { conflictOf, visibleText } from '@ctxbus/core/contract';
import { useEffect, useState } from 'preact/hooks';
import type { LiveBus } from '../live.js';
import { useBus } from '../live.js';
import { href } from '../router.js';
import { Badge, Empty, ErrorBox, TableScroll, Time, UrgencyBadge } from '../ui.js';
import { useHubData } from '../use-hub-data.js';

/** Links followed each way along a supersession chain, at most. */
const MAX_CHAIN = 20;

interface Detail {
  item: ContextItem;
  /** Oldest first, the item itself included. */
  chain: ContextItem[];
}

async function loadDetail(client: WebClient, id: string): Promise<Detail> {
  const item = await client.get(id);
  const older: ContextItem[] = [];
  let cursor = item.supersedes;
  while (cursor && older.length < MAX_CHAIN) {
    const previous = await client.get(cursor).catch(() => null);
    if (!previous) break;
    older.unshift(previous);
    cursor = previous.supersedes;
  }
  const newer: ContextItem[] = [];
  cursor = item.supersededBy;
  while (cursor && newer.length < MAX_CHAIN) {
    const next = await client.get(cursor).catch(() => null);
    if (!next) break;
    newer.push(next);
    cursor = next.supersededBy;
  }
  return { item, chain: [...older, item, ...newer] };
}

function Row({ label, children }: { label: string; children: preact.ComponentChildren }) {
  return (
    <>
      <dt>{label}</dt>
      <dd>{children}</dd>
    </>
  );
}

/**
 * An open conflict (two runtimes wrote one key differently): each value with a "Keep this"
 * button, shown only where the hub would accept the answer (a people's runtime, capabilities'
 * `approvers`, or an admin token); signed in as another runtime, the panel says who picks.
 */
function ConflictPanel({ item, client }: { item: ContextItem; client: WebClient }) {
  const approvers = useHubData(async () => (await client.capabilities()).approvers, [client]);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [kept, setKept] = useState<string | null>(null);
  const report = conflictOf(item);
  // Once kept here, the panel stays to say so: the resolution supersedes the conflict item at
  // once, and the live update must not take the answer away before the person has seen it.
  if (!report || (kept === null && (report.status !== 'open' || item.supersededBy !== null))) {
    return null;
  }
  const keep = async (id: string) => {
    setBusy(true);
    setError(null);
    try {
      await client.resolveConflict(item.id, id, 'kept from the dashboard');
      setKept(id);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="approval" data-testid="conflict">
      <p>
        Two runtimes wrote different values of <code>{report.key}</code>; the newer holds it until a
        person keeps one.
      </p>
      <ol>
        {report.values.map((value) => (
          <li key={value.id}>
            <a href={href('item', value.id)}>{visibleText(value.title)}</a>{' '}
            <span class="muted">
              by {value.runtime}, <Time iso={value.createdAt} />
            </span>{' '}
            {kept === value.id ? (
              <strong>Kept</strong>
            ) : approvers.data?.caller.approver ? (
              <button type="button" disabled={busy || kept !== null} onClick={() => keep(value.id)}>
                Keep this
              </button>
            ) : null}
          </li>
        ))}
      </ol>
      {approvers.data && !approvers.data.caller.approver ? (
        <p class="muted" data-testid="conflict-refusal">
          Only people keep a value, through {approvers.data.runtimes.join(', ') || 'an admin token'}
          ; this dashboard is signed in as {approvers.data.caller.runtime ?? 'an admin token'},
          which is not one of them.
        </p>
      ) : null}
      <ErrorBox error={error ?? approvers.error} />
    </div>
  );
}

/** One item: its content, provenance, supersession chain and who consumed it when. */
export function ItemView({ bus, client, id }: { bus: LiveBus; client: WebClient; id: string }) {
  useBus(bus);
  const [detail, setDetail] = useState<Detail | null>(null);
  const [error, setError] = useState<unknown>(null);
  // Reload when the stream brings a newer state of this item (consumed, superseded).
  const liveSeq = bus.cache.get(id)?.seq ?? 0;
  const liveConsumers = bus.cache.get(id)?.consumedBy.length ?? 0;
  const liveSuperseded = bus.cache.get(id)?.supersededBy ?? null;
  useEffect(() => {
    let current = true;
    loadDetail(client, id).then(
      (loaded) => {
        if (!current) return;
        setDetail(loaded);
        setError(null);
      },
      (failure) => current && setError(failure),
    );
    return () => {
      current = false;
    };
  }, [client, id, liveSeq, liveConsumers, liveSuperseded]);

  if (error) {
    return (
      <section aria-labelledby="view-title">
        <h1 id="view-title" tabIndex={-1}>
          Item
        </h1>
        <ErrorBox error={error} />
      </section>
    );
  }
  if (!detail) return <p aria-busy="true">Loading…</p>;
  const { item, chain } = detail;
  return (
    <section aria-labelledby="view-title" data-testid="item-detail">
      <h1 id="view-title" tabIndex={-1}>
        {visibleText(item.title)}
      </h1>
      <p class="item-meta">
        <Badge kind="type">{item.type}</Badge>
        <UrgencyBadge item={item} />
        <Badge kind="visibility">{item.visibility}</Badge>
        {item.relevanceTags.map((tag) => (
          <Badge key={tag} kind="tag">
            #{tag}
          </Badge>
        ))}
      </p>
      <ConflictPanel item={item} client={client} />
      {/* An agent's words: nothing hidden or reordered (visibleText), as the feed shows them. */}
      <pre class="content">{visibleText(item.content)}</pre>
      <h2>Provenance</h2>
      <dl class="facts" data-testid="provenance">
        <Row label="Runtime">{item.source.runtime}</Row>
        <Row label="Agent">{item.source.agentId ?? '—'}</Row>
        <Row label="Task">{item.source.taskId ?? '—'}</Row>
        <Row label="Thread">{item.source.threadId ?? '—'}</Row>
        <Row label="Written">
          <Time iso={item.createdAt} />
        </Row>
        <Row label="Expires">
          <Time iso={item.expiresAt} />
        </Row>
        <Row label="Scope">
          {item.scope}
          {item.scopeKey ? ` (${item.scopeKey})` : ''}
        </Row>
        <Row label="Key">{item.key ?? '—'}</Row>
        <Row label="Sequence">{item.seq}</Row>
        <Row label="Tokens">{item.tokens}</Row>
        <Row label="Redacted">
          {item.redactions.length === 0
            ? 'nothing'
            : item.redactions.map((r) => `${r.count} ${r.kind} in ${r.field}`).join(', ')}
        </Row>
        <Row label="Id">
          <code>{item.id}</code>
        </Row>
      </dl>
      <h2>Supersession</h2>
      {chain.length === 1 ? (
        <Empty>Nothing supersedes this item, and it supersedes nothing.</Empty>
      ) : (
        <ol class="chain" data-testid="supersession-chain">
          {chain.map((link) => (
            <li key={link.id} aria-current={link.id === item.id ? 'true' : undefined}>
              {link.id === item.id ? (
                <strong>{visibleText(link.title)}</strong>
              ) : (
                <a href={href('item', link.id)}>{visibleText(link.title)}</a>
              )}{' '}
              <span class="muted">
                by {link.source.runtime}, <Time iso={link.createdAt} />
                {link.supersededBy ? ' (superseded)' : ' (current)'}
              </span>
            </li>
          ))}
        </ol>
      )}
      <h2>Consumed by</h2>
      {item.consumedBy.length === 0 ? (
        <Empty>No runtime has consumed it yet.</Empty>
      ) : (
        <TableScroll label="Consumption per runtime">
          <table data-testid="consumption">
            <thead>
              <tr>
                <th scope="col">Runtime</th>
                <th scope="col">When</th>
              </tr>
            </thead>
            <tbody>
              {item.consumedBy.map((entry) => (
                <tr key={entry.runtime}>
                  <td>{entry.runtime}</td>
                  <td>
                    <Time iso={entry.at} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableScroll>
      )}
    </section>
  );
}
