import type { TestHub } from '@ctxbus/test-kit';
import { call, waitUntil } from '@ctxbus/test-kit';
import { useHubPair, withPostgres } from '@ctxbus/test-kit/postgres';
import { describe, expect, it } from 'vitest';
import { useInProcessHub } from './in-process-serve.ts';

// Presence is kept in the store: a worker announced to one hub is live on every hub of the
// database, so a task created through another hub is routed to the worker's runtime.

/** A code task that may not wait: with no worker online anywhere the router rejects it. */
const codeTask = (title: string) => ({
  title,
  requiredCapabilities: ['code_execution'],
  input: { argv: ['npm', 'test'] },
  preferences: { allowQueue: false },
});

async function create(hub: TestHub, token: string, title: string) {
  const response = await call(hub.url, 'POST', '/api/tasks', { token, body: codeTask(title) });
  expect(response.status).toBe(201);
  return response.body;
}

async function instancesOn(hub: TestHub, token: string, runtime: string) {
  const response = await call(hub.url, 'GET', '/api/capabilities', { token });
  expect(response.status).toBe(200);
  const entry = response.body.runtimes.find((item: { id: string }) => item.id === runtime);
  return (entry?.presence?.instances ?? []).map((item: { instanceId: string }) => item.instanceId);
}

await withPostgres('presence shared by hubs on PostgreSQL', (url, schemas) => {
  describe('presence across two hubs on one PostgreSQL schema', () => {
    const { a, b } = useHubPair(url, schemas, 'presence', useInProcessHub);

    it('routes a task created on hub B to a worker announced on hub A, and stops once it leaves A', async () => {
      const announced = await call(a.url, 'POST', '/api/presence', {
        token: a.tokens.code,
        body: {
          instanceId: 'laptop-a',
          kind: 'worker',
          capabilities: ['code_execution'],
          capacity: 1,
        },
      });
      expect(announced.status).toBe(200);
      expect(await instancesOn(b, a.tokens.claw, 'claude-code')).toEqual(['laptop-a']);
      // B has not read this team's presence before: its first routing reads the store.
      const routed = await create(b, a.tokens.claw, 'run the tests through hub B');
      expect(routed.routing).toMatchObject({ kind: 'proxy', runtime: 'claude-code' });
      expect(routed.task).toMatchObject({ state: 'SUBMITTED', targetRuntime: 'claude-code' });
      // The worker, on hub A, takes the task B routed to it.
      const claimed = await call(a.url, 'POST', '/api/tasks/claim', {
        token: a.tokens.code,
        body: { workerId: 'laptop-a', leaseMs: 30_000 },
      });
      expect(claimed.body.task).toMatchObject({ id: routed.task.id, state: 'WORKING' });
      // Another runtime cannot take the instance id through B either.
      const taken = await call(b.url, 'POST', '/api/presence', {
        token: a.tokens.claw,
        body: { instanceId: 'laptop-a', kind: 'worker' },
      });
      expect(taken.status).toBe(409);

      const left = await call(a.url, 'DELETE', '/api/presence/laptop-a', { token: a.tokens.code });
      expect(left.status).toBe(200);
      expect(await instancesOn(b, a.tokens.claw, 'claude-code')).toEqual([]);
      // B's routing may reuse the summary it read for up to 250 ms; then it rejects the task.
      let rejected: { routing: { kind: string }; task: { state: string } } | null = null;
      await waitUntil(
        async () => {
          const body = await create(b, a.tokens.claw, 'run the tests, no worker left');
          if (body.routing.kind === 'escalate') rejected = body;
          return rejected !== null;
        },
        'hub B to route as if no worker were online',
        { intervalMs: 100 },
      );
      expect(rejected).toMatchObject({ task: { state: 'REJECTED' } });
    });
  });
});
