import type { Server, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Store } from '@ctxbus/store';
import { openSqliteStore } from '@ctxbus/store';
import { startWebhookReceiver, waitUntil } from '@ctxbus/test-kit';
import { describe, expect, it } from 'vitest';
import { mintToken } from '../auth.js';
import type { Hub } from '../create-hub.js';
import { createHub } from '../create-hub.js';

// Push delivery shared between teams: one team's endpoints that take a delivery and never
// answer (each attempt holds a delivery slot for the whole timeout) against another team's
// webhook, with real HTTP on both sides.

/** An endpoint that takes every request and never answers it. */
async function hangingEndpoint(): Promise<{ url: string; close(): Promise<void> }> {
  const held: ServerResponse[] = [];
  const server: Server = createServer((_request, response) => {
    held.push(response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    close: async () => {
      for (const response of held) response.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** POSTs through the hub's app with a token, expecting 201; the answer's body. */
function created(hub: Hub) {
  return async (token: string, path: string, body: unknown): Promise<unknown> => {
    const response = await hub.app.request(path, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(response.status, await response.clone().text()).toBe(201);
    return response.json();
  };
}

describe('push delivery across teams', () => {
  it("a team whose endpoints never answer holds a quarter of the slots: another team's webhook goes out meanwhile", async () => {
    const store = openSqliteStore({ path: ':memory:' });
    const hub = await createHub({
      store,
      // 4 slots (a team may hold 1); an attempt times out only after a minute.
      webhooks: { allowPrivateEndpoints: true, concurrency: 4, timeoutMs: 60_000 },
    });
    const hanging = await hangingEndpoint();
    const receiver = await startWebhookReceiver();
    const call = created(hub);
    try {
      const slow = (await mintToken(store, { role: 'runtime', teamId: 'acme', runtime: 'web' }))
        .token;
      const other = (await mintToken(store, { role: 'runtime', teamId: 'globex', runtime: 'web' }))
        .token;
      for (let index = 0; index < 8; index++) {
        await call(slow, '/api/subscriptions', { delivery: 'push', endpoint: hanging.url });
      }
      await call(other, '/api/subscriptions', { delivery: 'push', endpoint: receiver.url });
      // acme's change is taken by its 8 endpoints, which hold it; then globex's.
      await call(slow, '/api/context', { type: 'status', title: 'held by acme' });
      await call(other, '/api/context', { type: 'status', title: 'for globex' });
      // Well within the minute acme's attempts hold their slots for.
      await receiver.waitFor((received) => received.length === 1, 20_000);
      expect(receiver.received[0]?.body).toContain('for globex');
    } finally {
      // The held attempts end first (the hub waits for deliveries under way as it closes).
      await hanging.close();
      await hub.close();
      await receiver.close();
      await store.close();
    }
  }, 60_000);
});

describe('push delivery after a stale listing', () => {
  it('resumes from the progress in the store, not from a listing read before the last delivery: nothing is sent twice', async () => {
    const store = openSqliteStore({ path: ':memory:' });
    // The listing a tick reads while a drain of the same subscription ends (or while another
    // hub delivers) is older than the saved cursor: here every listing is that old.
    let stale = false;
    const listing: Store = new Proxy(store, {
      get(target, property) {
        if (property === 'listSubscriptions' && stale) {
          return async (options: Parameters<Store['listSubscriptions']>[0]) =>
            (await target.listSubscriptions(options)).map((each) => ({ ...each, cursor: 0 }));
        }
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const hub = await createHub({ store: listing, webhooks: { allowPrivateEndpoints: true } });
    const receiver = await startWebhookReceiver();
    const call = created(hub);
    const seqs = () => receiver.received.map((hook) => JSON.parse(hook.body).seq as number);
    try {
      const token = (await mintToken(store, { role: 'runtime', teamId: 'acme', runtime: 'web' }))
        .token;
      await call(token, '/api/subscriptions', { delivery: 'push', endpoint: receiver.url });
      await call(token, '/api/context', { type: 'status', title: 'first' });
      await call(token, '/api/context', { type: 'status', title: 'second' });
      await receiver.waitFor((received) => received.length === 2);
      stale = true;
      const third = (await call(token, '/api/context', { type: 'status', title: 'third' })) as {
        results: { seq: number }[];
      };
      const last = third.results[0]?.seq ?? -1;
      await receiver.waitFor(() => seqs().includes(last));
      expect(seqs()).toEqual([...new Set(seqs())]);
      expect(seqs()).toHaveLength(3);
    } finally {
      await hub.close();
      await receiver.close();
      await store.close();
    }
  });
});

describe("a dead endpoint's failures in the log", () => {
  it('are logged once a minute per subscription, with how many were held back, not per attempt', async () => {
    const store = openSqliteStore({ path: ':memory:' });
    const lines: { message: string; held?: number }[] = [];
    const record =
      () =>
      (fields: unknown, message?: string): void => {
        if (typeof message === 'string' && message.startsWith('webhook ')) {
          lines.push({ message, held: (fields as { held?: number }).held });
        }
      };
    const logger = {
      info: record(),
      warn: record(),
      error: record(),
      debug: () => {},
      child: () => logger,
    } as unknown as NonNullable<Parameters<typeof createHub>[0]['logger']>;
    const refused = await hangingEndpoint();
    const endpoint = refused.url;
    await refused.close(); // nothing listens there now: every attempt is refused
    const hub = await createHub({
      store,
      logger,
      webhooks: { allowPrivateEndpoints: true, maxAttempts: 2, backoffBaseMs: 1, backoffMaxMs: 1 },
    });
    const call = created(hub);
    try {
      const token = (await mintToken(store, { role: 'runtime', teamId: 'acme', runtime: 'web' }))
        .token;
      const { subscription } = (await call(token, '/api/subscriptions', {
        delivery: 'push',
        endpoint,
      })) as { subscription: { id: string } };
      for (let index = 0; index < 10; index++) {
        await call(token, '/api/context', { type: 'status', title: `lost ${index}` });
      }
      const letters = async () =>
        (await store.listDeadLetters(subscription.id, { limit: 100 })).length;
      await waitUntil(async () => (await letters()) === 10, 'the 10 changes dead-lettered');
      // 10 changes, 2 attempts each: 10 retries and 10 dead letters, one line of each.
      expect(lines).toEqual([
        { message: 'webhook failed; will retry', held: 0 },
        { message: 'webhook dead-lettered', held: 0 },
      ]);
    } finally {
      await hub.close();
      await store.close();
    }
  });
});

describe('push delivery after the creating token is revoked elsewhere', () => {
  it('removes the subscription at its next delivery instead of sending (revoked in the store, as another hub or the offline CLI does)', async () => {
    const store = openSqliteStore({ path: ':memory:' });
    let nowMs = Date.now();
    const hub = await createHub({
      store,
      clock: () => new Date(nowMs),
      webhooks: { allowPrivateEndpoints: true },
    });
    const receiver = await startWebhookReceiver();
    const call = created(hub);
    try {
      const leaked = await mintToken(store, {
        role: 'runtime',
        teamId: 'acme',
        runtime: 'openclaw',
      });
      const web = (await mintToken(store, { role: 'runtime', teamId: 'acme', runtime: 'web' }))
        .token;
      const theirs = (await call(leaked.token, '/api/subscriptions', {
        delivery: 'push',
        endpoint: receiver.url,
      })) as { subscription: { id: string } };
      const control = (await call(web, '/api/subscriptions', {
        delivery: 'push',
        endpoint: receiver.url,
      })) as { subscription: { id: string } };
      await store.revokeToken(leaked.record.id);
      // Past the dispatcher's token-verdict interval: it reads the revocations again.
      nowMs += 5_000;
      await call(web, '/api/context', { type: 'status', title: 'after the revocation' });
      await receiver.waitFor((received) =>
        received.some((hook) => JSON.parse(hook.body).subscriptionId === control.subscription.id),
      );
      // The tick that sent it removed the other first.
      expect((await store.listSubscriptions()).map((each) => each.id)).toEqual([
        control.subscription.id,
      ]);
      expect(
        receiver.received.filter(
          (hook) => JSON.parse(hook.body).subscriptionId === theirs.subscription.id,
        ),
      ).toEqual([]);
    } finally {
      await hub.close();
      await receiver.close();
      await store.close();
    }
  });
});
