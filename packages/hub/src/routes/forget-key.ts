import type { ContextItem, ForgetKeyResponse, Viewer } from '@ctxbus/core';
import {
  CtxbusError,
  contextItemInputSchema,
  parseBlackboardKey,
  prepareParsedItem,
  REMOVED_TAG,
} from '@ctxbus/core';
import type { HubServices } from '../hub-services.js';

// `DELETE /api/context?key=`: a key's value and its history leave the store. A marker (tagged
// `removed`, no content) supersedes the live value, so every stream, subscriber and webhook
// learns of the removal as of any change; then every value of the key up to the marker,
// the marker too, expires at once: reads hide them, and the sweep takes them out.

// Only what an agent keeps as working state may be removed: a persistent resource
// (`resource/<name>`) or a blackboard entry. Every other key (a keyed decision, say) keeps its
// history, so no token, an agent's included, can erase what the team decided; a new value
// still supersedes the old one. Each removal is audited (`context.removed`).

/** Whether `key` names a resource or a blackboard entry, the keys a removal may take out. */
function removable(key: string): boolean {
  return key.startsWith('resource/') || parseBlackboardKey(key) !== null;
}

/** How long the marker would live if nothing expired it first (it is expired at once). */
const MARKER_SECONDS = 1;

async function newestValue(
  services: HubServices,
  viewer: Viewer,
  key: string,
): Promise<{ live: ContextItem | undefined; newest: ContextItem | undefined }> {
  const [live] = await services.store.listItems(viewer, { key, limit: 1 });
  if (live) return { live, newest: live };
  const [newest] = await services.store.listItems(viewer, {
    key,
    includeSuperseded: true,
    limit: 1,
  });
  return { live: undefined, newest };
}

/** Writes the marker that supersedes `holder`, seen by whoever could see the holder. */
async function writeMarker(
  services: HubServices,
  viewer: Viewer,
  holder: ContextItem,
  now: Date,
): Promise<ContextItem> {
  const input = contextItemInputSchema.parse({
    type: 'status',
    title: `${holder.key} removed`,
    key: holder.key,
    scope: holder.scope,
    ...(holder.scopeKey !== null && { scopeKey: holder.scopeKey }),
    visibility: holder.visibility,
    relevanceTags: [...new Set([REMOVED_TAG, ...holder.relevanceTags])].slice(0, 32),
    expiresAfterSeconds: MARKER_SECONDS,
  });
  const outcomes = await services.store.writeItems([prepareParsedItem(input, viewer, { now })]);
  services.feed.committed(outcomes);
  const marker = outcomes[0]?.item;
  if (!marker) throw new CtxbusError('internal', 'the store wrote no removal marker');
  return marker;
}

export async function forgetKey(
  services: HubServices,
  viewer: Viewer,
  key: string,
): Promise<ForgetKeyResponse> {
  if (!removable(key)) {
    throw new CtxbusError(
      'forbidden',
      `key ${key} keeps its history: only a resource (resource/<name>) or a blackboard entry (blackboard/<scope>/<id>/<entry>) can be removed; write a new value to supersede it`,
      { details: { reason: 'key_not_removable', key } },
    );
  }
  const { live, newest } = await newestValue(services, viewer, key);
  if (!newest) {
    throw new CtxbusError(
      'not_found',
      `no value of key ${key} (or it expired, or it is not visible to you)`,
      { details: { key } },
    );
  }
  const now = services.clock();
  const marker = live ? await writeMarker(services, viewer, live, now) : null;
  const expired = await services.store.expireKey(viewer, key, {
    throughSeq: marker?.seq ?? newest.seq,
    at: now.toISOString(),
  });
  const removed = marker ? expired - 1 : expired;
  // The team reads the audit log: a private value's key (often telling) and its marker's place
  // in the sequence are named there only by a reference of the key.
  const shown =
    newest.visibility === 'private'
      ? { key: services.derivedIds.privateKey(key), seq: null }
      : { key, seq: marker?.seq ?? null };
  await services.tasks.recordAudit(viewer.teamId, {
    kind: 'context.removed',
    actor: viewer.runtime,
    subject: shown.key.slice(0, 200),
    data: { ...shown, removed },
  });
  return { key, removed, seq: marker?.seq ?? null };
}
