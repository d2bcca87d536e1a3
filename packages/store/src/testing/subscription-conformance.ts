import { CtxbusError } from '@ctxbus/core';
import { expect } from 'vitest';
import type { SubscriptionRecord } from '../store.js';
import type { ConformanceHarness } from './conformance-harness.js';

// The subscription half of the store contract (see runStoreConformance, which runs these).

export const SUBSCRIPTION_CASES = [
  'subscriptions',
  'subscription-lease',
  'subscription-progress',
  'subscription-limit',
] as const;

export type SubscriptionCase = (typeof SUBSCRIPTION_CASES)[number];

const ids = {
  a: 'sub_0194f000-0000-7000-8000-000000000001',
  b: 'sub_0194f000-0000-7000-8000-000000000002',
  c: 'sub_0194f000-0000-7000-8000-000000000003',
};

function record(overrides: Partial<SubscriptionRecord>, now: Date): SubscriptionRecord {
  return {
    id: ids.a,
    teamId: 'acme',
    runtime: 'web',
    delivery: 'push',
    endpoint: 'https://hooks.example.com/ctxbus',
    secret: 'whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ=',
    label: null,
    filter: { tags: ['ops'], minUrgency: 'attention', events: ['context-added'] },
    createdAt: now.toISOString(),
    tokenId: 'tok_creator',
    cursor: 0,
    attempts: 0,
    nextAttemptAt: null,
    lastError: null,
    delivered: 0,
    deadLettered: 0,
    ...overrides,
  };
}

export function subscriptionCases(
  h: ConformanceHarness,
): Record<SubscriptionCase, () => Promise<void>> {
  const iso = (offsetMs = 0) => new Date(h.now().getTime() + offsetMs).toISOString();
  return {
    async subscriptions() {
      const store = h.store();
      const first = record({ label: 'ops pager' }, h.now());
      await store.createSubscription(first);
      h.advance(1);
      await store.createSubscription(
        record(
          {
            id: ids.b,
            delivery: 'pull',
            endpoint: null,
            secret: null,
            cursor: 7,
            filter: {},
            tokenId: null,
          },
          h.now(),
        ),
      );
      h.advance(1);
      await store.createSubscription(record({ id: ids.c, teamId: 'globex' }, h.now()));
      // Round trip, filter and secret included.
      expect(await store.getSubscription(ids.a)).toEqual(first);
      expect((await store.listSubscriptions()).map((s) => s.id)).toEqual([ids.a, ids.b, ids.c]);
      expect((await store.listSubscriptions({ teamId: 'acme' })).map((s) => s.id)).toEqual([
        ids.a,
        ids.b,
      ]);
      expect(
        (await store.listSubscriptions({ teamId: 'acme', delivery: 'pull' })).map((s) => s.id),
      ).toEqual([ids.b]);
      expect(await store.getSubscription('sub_0194f000-0000-7000-8000-00000000ffff')).toBeNull();
      expect(await store.deleteSubscription(ids.a)).toBe(true);
      expect(await store.deleteSubscription(ids.a)).toBe(false);
      expect(await store.getSubscription(ids.a)).toBeNull();
    },

    async 'subscription-limit'() {
      const store = h.store();
      const limit = 10;
      const attempt = (index: number, runtime = 'web') =>
        store
          .createSubscription(
            record(
              { id: `sub_0194f000-0000-7000-8000-${String(index).padStart(12, '0')}`, runtime },
              h.now(),
            ),
            limit,
          )
          .then(
            () => 'created',
            (error: unknown) => {
              expect(CtxbusError.isInstance(error) && error.code).toBe('validation_failed');
              expect((error as Error).message).toMatch(/at most 10 subscriptions/);
              return 'refused';
            },
          );
      // 60 concurrent creates (on PostgreSQL, on as many pooled connections): exactly 10 pass.
      const outcomes = await Promise.all(Array.from({ length: 60 }, (_, index) => attempt(index)));
      expect(outcomes.filter((outcome) => outcome === 'created')).toHaveLength(limit);
      const held = await store.listSubscriptions({ teamId: 'acme' });
      expect(held.filter((subscription) => subscription.runtime === 'web')).toHaveLength(limit);
      // The limit is per runtime: another runtime of the team still has all of its own.
      expect(await attempt(100, 'openclaw')).toBe('created');
      // Deleting one makes room for exactly one more.
      expect(await store.deleteSubscription(held[0]?.id ?? '')).toBe(true);
      const again = await Promise.all([attempt(200), attempt(201), attempt(202)]);
      expect(again.filter((outcome) => outcome === 'created')).toHaveLength(1);
    },

    async 'subscription-lease'() {
      const store = h.store();
      await store.createSubscription(record({}, h.now()));
      const leased = (holder: string, untilMs: number) =>
        store.leaseSubscription(ids.a, holder, iso(), iso(untilMs));
      // One holder at a time; the holder renews; another takes over once the lease ran out.
      expect((await leased('hub-1', 30_000))?.id).toBe(ids.a);
      expect(await leased('hub-2', 30_000)).toBeNull();
      expect((await leased('hub-1', 60_000))?.id).toBe(ids.a);
      h.advance(45_000);
      expect(await leased('hub-2', 30_000)).toBeNull();
      h.advance(15_000);
      expect((await leased('hub-2', 30_000))?.cursor).toBe(0);
      // Progress needs the running lease.
      expect(await store.saveSubscriptionProgress(ids.a, 'hub-1', { cursor: 3 }, iso())).toBe(
        false,
      );
      expect(await store.saveSubscriptionProgress(ids.a, 'hub-2', { cursor: 3 }, iso())).toBe(true);
      h.advance(30_000);
      expect(await store.saveSubscriptionProgress(ids.a, 'hub-2', { cursor: 4 }, iso())).toBe(
        false,
      );
      expect((await store.getSubscription(ids.a))?.cursor).toBe(3);
      // The lease answers with the progress saved under the previous one (a drain resumes there).
      expect(await leased('hub-1', 30_000)).toMatchObject({ id: ids.a, cursor: 3, delivered: 0 });
      expect(await store.leaseSubscription(ids.b, 'hub-1', iso(), iso(30_000))).toBeNull();
    },

    async 'subscription-progress'() {
      const store = h.store();
      await store.createSubscription(record({}, h.now()));
      await store.createSubscription(
        record({ id: ids.b, delivery: 'pull', endpoint: null, secret: null }, h.now()),
      );
      expect(await store.leaseSubscription(ids.a, 'hub-1', iso(), iso(30_000))).not.toBeNull();
      const retryAt = iso(2_000);
      expect(
        await store.saveSubscriptionProgress(
          ids.a,
          'hub-1',
          { cursor: 5, delivered: 2, attempts: 1, nextAttemptAt: retryAt, lastError: 'HTTP 503' },
          iso(),
        ),
      ).toBe(true);
      expect(await store.getSubscription(ids.a)).toMatchObject({
        cursor: 5,
        delivered: 2,
        attempts: 1,
        nextAttemptAt: retryAt,
        lastError: 'HTTP 503',
        deadLettered: 0,
      });
      // Given up on: dead-lettered and counted in the same step; cursors never move back.
      const failedAt = iso();
      expect(
        await store.saveSubscriptionProgress(
          ids.a,
          'hub-1',
          {
            cursor: 6,
            attempts: 0,
            nextAttemptAt: null,
            lastError: null,
            deadLetters: [
              {
                subscriptionId: ids.a,
                seq: 6,
                event: 'context-added',
                itemId: 'i6',
                attempts: 8,
                lastError: 'HTTP 500',
                failedAt,
              },
            ],
          },
          iso(),
        ),
      ).toBe(true);
      expect(
        await store.saveSubscriptionProgress(ids.a, 'hub-1', { cursor: 2, delivered: 1 }, iso()),
      ).toBe(true);
      expect(await store.getSubscription(ids.a)).toMatchObject({
        cursor: 6,
        delivered: 3,
        attempts: 0,
        nextAttemptAt: null,
        lastError: null,
        deadLettered: 1,
      });
      expect(await store.listDeadLetters(ids.a, { limit: 10 })).toEqual([
        {
          subscriptionId: ids.a,
          seq: 6,
          event: 'context-added',
          itemId: 'i6',
          attempts: 8,
          lastError: 'HTTP 500',
          failedAt,
        },
      ]);
      expect(await store.listDeadLetters(ids.a, { afterSeq: 6, limit: 10 })).toEqual([]);
      // Pull acknowledgements need no lease.
      expect(await store.saveSubscriptionProgress(ids.b, null, { cursor: 9 }, iso())).toBe(true);
      expect((await store.getSubscription(ids.b))?.cursor).toBe(9);
      // Dead letters go with their subscription.
      expect(await store.deleteSubscription(ids.a)).toBe(true);
      expect(await store.listDeadLetters(ids.a, { limit: 10 })).toEqual([]);
      expect(await store.saveSubscriptionProgress(ids.a, null, { cursor: 10 }, iso())).toBe(false);
    },
  };
}
