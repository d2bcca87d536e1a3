import type { ConflictReport, ContextItem, ContextItemInput, Viewer } from '@ctxbus/core';
import {
  backoffDelay,
  CONFLICT_WRITER,
  CtxbusError,
  conflictItemInput,
  conflictOf,
  contextItemInputSchema,
  isConflict,
  isConflictKey,
  personRefusal,
  prepareParsedItem,
  resolutionItemInput,
  sameValue,
} from '@ctxbus/core';
import type { WriteOutcome } from '@ctxbus/store';
import type { Caller } from '../caller.js';
import type { HubServices } from '../hub-services.js';

// Conflicts made visible (docs/api.md, Conflicts). Last-write-wins decides a key's value as
// before; the store reports what each write replaced, decided under its lock, so two racing
// writes of one key are told apart exactly once. When a write took a key from another
// runtime's value written within the window, with a different value, the hub writes a conflict
// item (blocking: every stream, webhook and the Telegram bot hear of it), and a person picks
// the value to keep: only people's channels decide (capabilities.yaml `approvers`, default cli,
// telegram, web, or an admin token), as with approvals; agents never do. Each resolution, and
// each refused attempt, is audited.

const hubViewer = (teamId: string): Viewer => ({ teamId, runtime: CONFLICT_WRITER });

function prepare(input: ContextItemInput, viewer: Viewer, now: Date) {
  return prepareParsedItem(contextItemInputSchema.parse(input), viewer, { now });
}

/** Conflict items waiting for a retry at most (each retry rewrites the same ids). */
const MAX_RETRIED_CONFLICTS = 1_000;
const RETRY_FIRST_MS = 200;
const RETRY_MAX_MS = 30_000;

/**
 * Writes a conflict item for each write in `outcomes` that raised one. The writes themselves
 * stand. A conflict item's id follows from the two items, so writing it again is the same
 * write: one that fails is retried with backoff until it is stored (up to
 * MAX_RETRIED_CONFLICTS waiting at once; past that each is logged as lost).
 */
export async function raiseConflicts(
  services: HubServices,
  outcomes: readonly WriteOutcome[],
): Promise<void> {
  const now = services.clock();
  const raised = [];
  for (const outcome of outcomes) {
    if (outcome.status !== 'created' || !outcome.superseded) continue;
    const candidate = {
      winner: outcome.item,
      replaced: outcome.superseded.item,
      via: outcome.superseded.via,
    };
    if (!isConflict(candidate, services.conflictWindowMs)) continue;
    const input = {
      ...conflictItemInput(candidate),
      id: services.derivedIds.conflict(candidate.replaced.id, candidate.winner.id),
    };
    raised.push(prepare(input, hubViewer(outcome.item.teamId), now));
  }
  if (raised.length > 0) await writeConflicts(services, raised, 0);
}

let retrying = 0;

async function writeConflicts(
  services: HubServices,
  items: ReturnType<typeof prepare>[],
  attempt: number,
): Promise<void> {
  try {
    services.feed.committed(await services.store.writeItems(items));
  } catch (error) {
    const keys = items.map((item) => item.key);
    if (retrying + items.length > MAX_RETRIED_CONFLICTS) {
      services.logger.error(
        { error: String(error), keys },
        'conflict items lost: too many retries waiting',
      );
      return;
    }
    const delayMs = backoffDelay(attempt, { initialMs: RETRY_FIRST_MS, maxMs: RETRY_MAX_MS });
    services.logger.error(
      { error: String(error), keys, retryInMs: delayMs },
      'could not write a conflict item; retrying',
    );
    retrying += items.length;
    setTimeout(() => {
      retrying -= items.length;
      void writeConflicts(services, items, attempt + 1);
    }, delayMs).unref();
  }
}

interface Chooser {
  teamId: string;
  by: string;
  /** The choosing runtime; null for an admin token. */
  runtime: string | null;
}

async function refuse(
  services: HubServices,
  teamId: string,
  conflictId: string,
  runtime: string,
  error: CtxbusError,
): Promise<never> {
  await services.tasks.recordAudit(teamId, {
    kind: 'conflict.refused',
    actor: runtime,
    subject: conflictId,
    data: { runtime, ...(error.details as Record<string, unknown>), message: error.message },
  });
  throw error;
}

/**
 * The `conflict/` keys are the hub's, and a conflict closes only by a person's choice: a write
 * to one of those keys, or one that supersedes a conflict item by name, would close or hide an
 * open conflict with an agent's value left holding the key. Refused (403, reason
 * `reserved_key`) and audited (`conflict.refused`).
 */
export async function assertNoConflictTakeover(
  services: HubServices,
  viewer: Viewer,
  inputs: readonly { key?: string | null | undefined; supersedes?: string | null | undefined }[],
): Promise<void> {
  for (const input of inputs) {
    let subject: string | null = isConflictKey(input.key) ? (input.key ?? null) : null;
    if (subject === null && input.supersedes) {
      const target = await services.store.getItem(viewer, input.supersedes);
      if (target && (isConflictKey(target.key) || conflictOf(target))) subject = target.id;
    }
    if (subject === null) continue;
    await refuse(
      services,
      viewer.teamId,
      subject,
      viewer.runtime,
      new CtxbusError(
        'forbidden',
        `${subject}: conflict items are the hub's; a person resolves a conflict (ctxbus conflicts resolve, Telegram, the dashboard, POST /api/conflicts/:id/resolve)`,
        { details: { reason: 'reserved_key' } },
      ),
    );
  }
}

/** Who picks, for which team: an admin naming the team, or a people's runtime for its own. */
export async function chooser(
  caller: Caller,
  team: string | undefined,
  services: HubServices,
  conflictId: string,
): Promise<Chooser> {
  if (caller.role === 'admin') {
    if (team === undefined) {
      throw new CtxbusError('validation_failed', 'body.team: an admin token must name the team');
    }
    return { teamId: team, by: `admin:${caller.tokenId}`, runtime: null };
  }
  if (caller.teamId === null || caller.runtime === null) {
    throw new CtxbusError('forbidden', 'this token acts for no team');
  }
  if (team !== undefined && team !== caller.teamId) {
    throw new CtxbusError('forbidden', `a runtime token picks for its own team (${caller.teamId})`);
  }
  const refusal = personRefusal(services.capabilities.matrix(), caller.runtime);
  if (refusal) {
    const restricted = refusal.role === 'restricted';
    await refuse(
      services,
      caller.teamId,
      conflictId,
      caller.runtime,
      new CtxbusError(
        'forbidden',
        `runtime ${caller.runtime} cannot resolve conflicts: only people pick, through ${restricted ? 'a runtime that is not restricted' : `an approver runtime (${refusal.approvers.join(', ') || 'none'})`} or an admin token`,
        {
          details: {
            reason: 'approver_required',
            runtime: caller.runtime,
            role: refusal.role,
            approvers: refusal.approvers,
          },
        },
      ),
    );
  }
  return { teamId: caller.teamId, by: caller.runtime, runtime: caller.runtime };
}

/** The open conflict `id`, or the error that says why it cannot be resolved. */
export async function openConflict(
  services: HubServices,
  viewer: Viewer,
  id: string,
): Promise<{ item: ContextItem; report: ConflictReport }> {
  const item = await services.store.getItem(viewer, id);
  const report = item ? conflictOf(item) : null;
  if (!item || !report) {
    throw new CtxbusError('not_found', `no conflict ${id} in team ${viewer.teamId}`, {
      details: { id },
    });
  }
  if (report.status === 'resolved') {
    throw new CtxbusError('conflict', `item ${id} records a resolution: nothing to pick`, {
      details: { reason: 'already_resolved', id },
    });
  }
  if (item.supersededBy !== null) {
    const next = await services.store.getItem(viewer, item.supersededBy);
    const closed = next ? conflictOf(next) : null;
    if (closed?.status === 'resolved' && closed.conflictId === id) {
      throw new CtxbusError(
        'conflict',
        `conflict ${id} was already resolved by ${closed.resolution?.by ?? '?'}: it kept ${closed.resolution?.keep ?? '?'}`,
        { details: { reason: 'already_resolved', id, resolution: closed.resolution } },
      );
    }
    throw new CtxbusError(
      'conflict',
      `conflict ${id} was replaced by a newer conflict on ${report.key} (${item.supersededBy}): resolve that one`,
      { details: { reason: 'superseded', id, supersededBy: item.supersededBy } },
    );
  }
  return { item, report };
}

/** The kept value as the key's new live item, unless it holds the key already (null). */
function restoreInput(
  kept: ContextItem,
  holder: ContextItem | undefined,
  provenance: Record<string, string>,
): ContextItemInput | null {
  if (holder && (holder.id === kept.id || sameValue(holder, kept))) return null;
  return {
    type: kept.type,
    title: kept.title,
    ...(kept.summary && { summary: kept.summary }),
    ...(kept.content && { content: kept.content }),
    scope: kept.scope,
    ...(kept.scopeKey !== null && { scopeKey: kept.scopeKey }),
    relevanceTags: kept.relevanceTags,
    urgency: kept.urgency,
    visibility: 'team',
    ...(kept.key !== null && { key: kept.key }),
    // Named: the person saw the value it replaces, so this write raises no conflict of its own
    // (and fails if another write took the key meanwhile).
    ...(holder && { supersedes: holder.id }),
    runtimeOptions: { ...kept.runtimeOptions, ctxbus: provenance },
  };
}

export interface Resolved {
  resolution: ContextItem;
  kept: ContextItem;
}

/** Keeps `keep`'s value as the key's live one and closes the conflict, in one write. */
export async function resolveConflict(
  services: HubServices,
  who: Chooser,
  id: string,
  keep: string,
  note: string | null,
): Promise<Resolved> {
  const viewer: Viewer = { teamId: who.teamId, runtime: who.runtime ?? CONFLICT_WRITER };
  const { item, report } = await openConflict(services, viewer, id);
  if (!report.values.some((value) => value.id === keep)) {
    throw new CtxbusError(
      'validation_failed',
      `body.keep: conflict ${id} is between ${report.values.map((v) => v.id).join(' and ')}; keep one of them`,
      { details: { field: 'keep', values: report.values.map((value) => value.id) } },
    );
  }
  const kept = await services.store.getItem(viewer, keep);
  if (!kept) {
    throw new CtxbusError(
      'conflict',
      `item ${keep} is gone (expired or removed): it cannot be kept`,
      {
        details: { reason: 'value_gone', id: keep },
      },
    );
  }
  const [holder] = await services.store.listItems(viewer, { key: report.key, limit: 1 });
  const now = services.clock();
  const restore = restoreInput(kept, holder, {
    restoredFrom: keep,
    chosenBy: who.by,
    conflictId: id,
  });
  const restored = restore ? prepare(restore, viewer, now) : null;
  const closing = resolutionItemInput(item, report, {
    keep,
    by: who.by,
    at: now.toISOString(),
    restoredId: restored?.id ?? null,
    note,
  });
  const writes = [...(restored ? [restored] : []), prepare(closing, hubViewer(who.teamId), now)];
  const outcomes = await services.store.writeItems(writes);
  services.feed.committed(outcomes);
  const resolution = outcomes.at(-1)?.item;
  if (!resolution) throw new CtxbusError('internal', 'the store wrote no resolution');
  await services.tasks.recordAudit(who.teamId, {
    kind: 'conflict.resolved',
    actor: who.by,
    subject: id,
    data: {
      key: report.key,
      kept: keep,
      discarded: report.values.filter((value) => value.id !== keep).map((value) => value.id),
      restoredId: restored?.id ?? null,
      resolutionId: resolution.id,
    },
  });
  return { resolution, kept: restored ? (outcomes[0]?.item ?? kept) : (holder ?? kept) };
}
