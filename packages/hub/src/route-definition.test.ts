import { wireRoutes } from '@ctxbus/core';
import { openSqliteStore } from '@ctxbus/store';
import { describe, expect, it } from 'vitest';
import { createHub } from './create-hub.js';

describe('the hub against the wire table', () => {
  it('serves every table entry once, each as the table says, and describes its answers', async () => {
    const store = openSqliteStore({ path: ':memory:' });
    const hub = await createHub({ store });
    try {
      const served = hub.routes.map((route) => route.operationId);
      expect(new Set(served).size).toBe(served.length);
      expect([...served].sort()).toEqual(Object.keys(wireRoutes).sort());
      for (const route of hub.routes) {
        const wire = wireRoutes[route.operationId as keyof typeof wireRoutes];
        expect(`${route.method} ${route.path} ${route.auth}`, route.operationId).toBe(
          `${wire.method} ${wire.path} ${wire.auth}`,
        );
        expect(route.responses, route.operationId).toBe(wire.responses);
        for (const status of Object.keys(wire.responses)) {
          expect(route.statuses[Number(status)], `${route.operationId} ${status}`).toBeTruthy();
        }
      }
    } finally {
      await hub.close();
      await store.close();
    }
  });
});
