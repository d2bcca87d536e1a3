import type { PendingResponse, Subscription, Viewer } from '@ctxbus/core';
import { CHANGE_EVENT_NAMES, CtxbusError, newItemId, redactSecrets } from '@ctxbus/core';
import type { SubscriptionRecord } from '@ctxbus/store';
import type { HubServices } from '../hub-services.js';
import { implement } from '../route-definition.js';
import { checkEndpoint } from '../webhooks/endpoint-guard.js';
import { subscriptionMatcher } from '../webhooks/push-dispatcher.js';
import { newWebhookSecret } from '../webhooks/webhook-signature.js';

/** Subscriptions one runtime may hold. */
export const MAX_SUBSCRIPTIONS_PER_RUNTIME = 100;
/** Changes one pending read looks through at most (matching or not). */
const PENDING_SCAN_LIMIT = 5_000;

/**
 * Whether the subscriber sees a change's item at all (its team's, or private to its own
 * runtime): `next` moves past only those, or it would count another runtime's private writes.
 */
const seenBy = (
  record: SubscriptionRecord,
  item: { visibility: string; source: { runtime: string } },
) => item.visibility === 'team' || item.source.runtime === record.runtime;

/** What the API shows of a subscription: never its secret. */
export function subscriptionView(record: SubscriptionRecord): Subscription {
  return {
    id: record.id,
    teamId: record.teamId,
    runtime: record.runtime,
    delivery: record.delivery,
    endpoint: record.endpoint,
    label: record.label,
    filter: record.filter,
    createdAt: record.createdAt,
    cursor: record.cursor,
    delivered: record.delivered,
    deadLettered: record.deadLettered,
    retry:
      record.attempts > 0 && record.nextAttemptAt !== null
        ? {
            attempts: record.attempts,
            nextAttemptAt: record.nextAttemptAt,
            lastError: record.lastError ?? '',
          }
        : null,
  };
}

/**
 * A subscription belongs to one runtime of one team; to anyone else it does not exist (it
 * would show that runtime's private items).
 */
async function ownSubscription(
  services: HubServices,
  viewer: Viewer,
  id: string,
): Promise<SubscriptionRecord> {
  const record = await services.store.getSubscription(id);
  if (!record || record.teamId !== viewer.teamId || record.runtime !== viewer.runtime) {
    throw new CtxbusError('not_found', `no subscription ${id} for this runtime`, {
      details: { id },
    });
  }
  return record;
}

function pullOnly(record: SubscriptionRecord): void {
  if (record.delivery !== 'pull') {
    throw new CtxbusError(
      'conflict',
      `subscription ${record.id} is delivered by push to its endpoint; pending and ack are for pull subscriptions`,
    );
  }
}

const notFound = { 404: 'No such subscription for this runtime.' };

export const subscriptionRoutes = [
  implement('createSubscription', {
    summary: 'Subscribe this runtime to changes (push to a webhook, or pull)',
    description:
      'Push: the hub POSTs each matching change, in sequence order, to `endpoint`, signed as Standard Webhooks do (`webhook-id` = idempotency key, `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256 of id.timestamp.body>` keyed by the secret returned here, once). Failures are retried with exponential backoff, then dead-lettered. Pull: the hub keeps a cursor; read with GET .../pending, move it with POST .../ack. Endpoints must be http(s) on public addresses unless the hub allows private ones.',
    tags: ['subscriptions'],
    statuses: {
      201: 'The subscription (and its secret, for push).',
      403: 'The body names another runtime than the token.',
      422: 'The endpoint is not allowed (private address, bad scheme...).',
    },
    async handler({ body, viewer, caller, services }) {
      if (body.runtime !== undefined && body.runtime !== viewer.runtime) {
        throw new CtxbusError(
          'forbidden',
          `this token acts as runtime ${viewer.runtime}; it cannot subscribe for ${body.runtime}`,
        );
      }
      if (body.endpoint !== undefined) {
        await checkEndpoint(body.endpoint, services.webhooks.allowPrivateEndpoints);
      }
      const latest = await services.store.latestSeq();
      if (body.since !== undefined && body.since > latest) {
        throw new CtxbusError(
          'validation_failed',
          `body.since: ${body.since} is beyond the newest change (${latest})`,
        );
      }
      const secret = body.delivery === 'push' ? newWebhookSecret() : null;
      const record: SubscriptionRecord = {
        id: `sub_${newItemId()}`,
        teamId: viewer.teamId,
        runtime: viewer.runtime,
        delivery: body.delivery,
        endpoint: body.endpoint ?? null,
        secret,
        label: body.label === undefined ? null : redactSecrets(body.label, 'label').text,
        filter: body.filter ?? {},
        createdAt: services.clock().toISOString(),
        tokenId: caller.tokenId,
        cursor: body.since ?? latest,
        attempts: 0,
        nextAttemptAt: null,
        lastError: null,
        delivered: 0,
        deadLettered: 0,
      };
      // Counted and stored atomically by the store (concurrent creates never pass the limit).
      await services.store.createSubscription(record, MAX_SUBSCRIPTIONS_PER_RUNTIME);
      services.dispatcher?.kick();
      return { status: 201, body: { subscription: subscriptionView(record), secret } };
    },
  }),
  implement('listSubscriptions', {
    summary: "This runtime's subscriptions",
    tags: ['subscriptions'],
    statuses: { 200: 'Oldest first.' },
    async handler({ viewer, services }) {
      const records = await services.store.listSubscriptions({ teamId: viewer.teamId });
      return {
        status: 200,
        body: {
          subscriptions: records
            .filter((record) => record.runtime === viewer.runtime)
            .map(subscriptionView),
        },
      };
    },
  }),
  implement('getSubscription', {
    summary: 'One subscription with its delivery state',
    tags: ['subscriptions'],
    statuses: { 200: 'The subscription.', ...notFound },
    async handler({ params, viewer, services }) {
      const record = await ownSubscription(services, viewer, params.id);
      return { status: 200, body: { subscription: subscriptionView(record) } };
    },
  }),
  implement('deleteSubscription', {
    summary: 'Unsubscribe (its dead letters go with it)',
    tags: ['subscriptions'],
    statuses: { 200: 'Deleted.', ...notFound },
    async handler({ params, viewer, services }) {
      await ownSubscription(services, viewer, params.id);
      await services.store.deleteSubscription(params.id);
      return { status: 200, body: { deleted: true } };
    },
  }),
  implement('pendingChanges', {
    summary: 'Pull: the matching changes after the cursor (the cursor does not move)',
    description:
      "Reads changes after the subscription cursor, keeping those that match (as this runtime sees them), up to `limit`. Reading twice returns the same changes: acknowledge `next` with POST .../ack once they are handled. `next` is the last change read that this runtime sees (matching or not): another runtime's private changes do not move it (unless more than 5,000 changes were read in one call).",
    tags: ['subscriptions'],
    statuses: { 200: 'Pending changes.', 409: 'A push subscription.', ...notFound },
    async handler({ params, query, viewer, services }) {
      const record = await ownSubscription(services, viewer, params.id);
      pullOnly(record);
      const matches = subscriptionMatcher(record);
      const result: PendingResponse = { changes: [], next: record.cursor, more: false };
      let scanned = 0;
      let after = record.cursor;
      for (;;) {
        const batch = await services.store.readChanges({
          afterSeq: after,
          teamId: record.teamId,
          limit: 500,
        });
        for (const change of batch) {
          after = change.seq;
          scanned += 1;
          if (matches(change, services.clock())) {
            if (result.changes.length === query.limit) {
              result.more = true;
              return { status: 200, body: result };
            }
            result.changes.push({
              seq: change.seq,
              event: CHANGE_EVENT_NAMES[change.kind],
              item: change.item,
            });
          }
          if (seenBy(record, change.item)) result.next = change.seq;
        }
        if (batch.length < 500) return { status: 200, body: result };
        if (scanned >= PENDING_SCAN_LIMIT) {
          // A long run of changes it does not see: past them, or it would read them forever.
          result.next = after;
          result.more = true;
          return { status: 200, body: result };
        }
      }
    },
  }),
  implement('acknowledgeChanges', {
    summary: 'Pull: move the cursor to `seq` (never backwards)',
    tags: ['subscriptions'],
    statuses: { 200: 'The subscription after the move.', 409: 'A push subscription.', ...notFound },
    async handler({ params, body, viewer, services }) {
      const record = await ownSubscription(services, viewer, params.id);
      pullOnly(record);
      const latest = await services.store.latestSeq();
      if (body.seq > latest) {
        throw new CtxbusError(
          'validation_failed',
          `body.seq: ${body.seq} is beyond the newest change (${latest})`,
        );
      }
      const now = services.clock().toISOString();
      await services.store.saveSubscriptionProgress(record.id, null, { cursor: body.seq }, now);
      const after = await ownSubscription(services, viewer, params.id);
      return { status: 200, body: { subscription: subscriptionView(after) } };
    },
  }),
  implement('listDeadLetters', {
    summary: 'Push: changes given up on after the last retry',
    tags: ['subscriptions'],
    statuses: { 200: 'In sequence order.', ...notFound },
    async handler({ params, query, viewer, services }) {
      const record = await ownSubscription(services, viewer, params.id);
      const letters = await services.store.listDeadLetters(record.id, {
        limit: query.limit,
        ...(query.after !== undefined && { afterSeq: query.after }),
      });
      return {
        status: 200,
        body: { deadLetters: letters.map(({ subscriptionId: _id, ...letter }) => letter) },
      };
    },
  }),
];
