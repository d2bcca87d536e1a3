import type { TestHub } from '@ctxbus/test-kit';
import { call, openStream } from '@ctxbus/test-kit';
import { storeUrl, withPostgres } from '@ctxbus/test-kit/postgres';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInProcessServe, useInProcessHub } from './in-process-serve.ts';

// Seed 004's layers 2 and 3 through the MCP endpoint of a real `ctxbus serve` (/mcp), on the
// embedded store and on PostgreSQL: the seed's calls, the stream event a board change makes,
// deletion down to the history, and teams and private values kept apart.

const TOKENS = {
  code: ['acme', 'claude-code'],
  claw: ['acme', 'openclaw'],
  other: ['globex', 'claude-code'],
} as const;

async function connect(url: string, token: string): Promise<Client> {
  const client = new Client({ name: 'mcp-layers-test', version: '0.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  return client;
}

async function tool(client: Client, name: string, args: Record<string, unknown>) {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const first = result.content[0];
  return {
    isError: result.isError === true,
    text: first?.type === 'text' ? first.text : '',
    structured: result.structuredContent as Record<string, any>,
  };
}

function defineLayerTests(label: string, start?: () => Promise<TestHub>) {
  describe(`layers over /mcp (${label})`, () => {
    const hub = useInProcessHub({ tokens: TOKENS, ...(start && { start }) });
    const clients = {} as Record<keyof typeof TOKENS, Client>;
    beforeAll(async () => {
      for (const name of Object.keys(TOKENS) as (keyof typeof TOKENS)[]) {
        clients[name] = await connect(hub.url, hub.tokens[name]);
      }
    });
    afterAll(async () => {
      for (const client of Object.values(clients)) await client.close();
    });

    it("the seed's update_swarm_shared_state(key, value) reaches a subscriber as blackboard-updated", async () => {
      const subscriber = openStream(hub.url, hub.tokens.claw, { query: 'blackboard=true' });
      await subscriber.ready;
      const written = await tool(clients.code, 'update_swarm_shared_state', {
        key: 'build-status',
        value: { green: true },
      });
      expect(written.isError, written.text).toBe(false);
      await subscriber.waitFor((events) => events.some((e) => e.event === 'blackboard-updated'));
      expect(subscriber.items().find((e) => e.event === 'blackboard-updated')).toMatchObject({
        board: { scope: 'space', id: 'swarm' },
        entry: 'build-status',
        change: 'context-added',
      });
      subscriber.close();
      const read = await tool(clients.claw, 'update_swarm_shared_state', {});
      expect(read.structured.board).toMatchObject({
        taskResults: { 'build-status': { green: true } },
        updatedBy: 'claude-code',
      });
      const outsider = await tool(clients.other, 'update_swarm_shared_state', {});
      expect(outsider.structured.board).toMatchObject({ taskResults: {}, lastUpdated: null });
    });

    it('resource_manage put, list, delete: the value and its history go, for the team only', async () => {
      const put = { action: 'put', name: 'runbooks/rollback', type: 'routine' };
      await tool(clients.code, 'resource_manage', {
        ...put,
        value: 'v1: roll back with the quartz switch',
      });
      await tool(clients.code, 'resource_manage', { ...put, value: 'v2: roll back with the flag' });
      const listed = await tool(clients.claw, 'resource_manage', {
        action: 'list',
        type: 'routine',
      });
      expect(listed.structured.resources.map((r: { name: string }) => r.name)).toEqual([
        'runbooks/rollback',
      ]);
      const theirs = await tool(clients.other, 'resource_manage', {
        action: 'delete',
        name: 'runbooks/rollback',
      });
      expect(theirs.isError).toBe(true);
      expect(theirs.text).toMatch(/not found/);
      const deleted = await tool(clients.claw, 'resource_manage', {
        action: 'delete',
        name: 'runbooks/rollback',
      });
      expect(deleted.structured).toEqual({ action: 'delete', removed: true });
      const history = await call(
        hub.url,
        'GET',
        '/api/context?key=resource/runbooks/rollback&includeSuperseded=true',
        { token: hub.tokens.code },
      );
      expect(history.body.items).toEqual([]);
      const search = await call(hub.url, 'POST', '/api/context/search', {
        token: hub.tokens.code,
        body: { query: 'quartz switch' },
      });
      expect(search.body.results).toEqual([]);
      // The removal is in the team's audit log: who removed which key.
      const audit = await call(hub.url, 'GET', '/api/audit?limit=1000', { token: hub.tokens.code });
      const removed = (audit.body.records as { kind: string; actor: string; subject: string }[])
        .filter((record) => record.kind === 'context.removed')
        .map(({ actor, subject }) => ({ actor, subject }));
      expect(removed).toContainEqual({ actor: 'openclaw', subject: 'resource/runbooks/rollback' });
    });

    it("a private value's removal is audited without its key, which the team reads", async () => {
      const key = 'resource/acquisition-of-globex';
      for (const value of ['v1', 'v2']) {
        const written = await call(hub.url, 'POST', '/api/context', {
          token: hub.tokens.code,
          body: { type: 'discovery', title: value, key, visibility: 'private' },
        });
        expect(written.status).toBe(201);
      }
      const gone = await call(hub.url, 'DELETE', `/api/context?key=${key}`, {
        token: hub.tokens.code,
      });
      expect(gone.status, JSON.stringify(gone.body)).toBe(200);
      const audit = await call(hub.url, 'GET', '/api/audit?limit=1000', { token: hub.tokens.claw });
      expect(JSON.stringify(audit.body)).not.toContain('acquisition-of-globex');
      const records = (audit.body.records as { kind: string; actor: string; data: any }[]).filter(
        (record) => record.kind === 'context.removed' && record.data.key.startsWith('private-key:'),
      );
      expect(records.map(({ actor, data }) => [actor, data.removed, data.seq])).toEqual([
        ['claude-code', 2, null],
      ]);
    });

    it("no token can erase a keyed decision's history: only resources and board entries go", async () => {
      const decision = await call(hub.url, 'POST', '/api/context', {
        token: hub.tokens.code,
        body: { type: 'decision', title: 'Use PostgreSQL', key: 'db-choice' },
      });
      expect(decision.status).toBe(201);
      const erase = await call(hub.url, 'DELETE', '/api/context?key=db-choice', {
        token: hub.tokens.claw,
      });
      expect(erase.status).toBe(403);
      expect(erase.body.error.details.reason).toBe('key_not_removable');
      const still = await call(hub.url, 'GET', '/api/context?key=db-choice', {
        token: hub.tokens.claw,
      });
      expect(still.body.items.map((item: { title: string }) => item.title)).toEqual([
        'Use PostgreSQL',
      ]);
    });

    it('a private resource or board entry never reaches another runtime', async () => {
      await tool(clients.code, 'resource_manage', {
        action: 'put',
        name: 'notes/mine',
        value: 'the amber plan',
        visibility: 'private',
      });
      await tool(clients.code, 'update_swarm_shared_state', {
        board: 'private-board',
        key: 'draft',
        value: 'amber',
        visibility: 'private',
      });
      const get = await tool(clients.claw, 'resource_manage', {
        action: 'get',
        name: 'notes/mine',
      });
      expect(get.isError).toBe(true);
      const found = await tool(clients.claw, 'resource_manage', {
        action: 'list',
        query: 'amber plan',
      });
      expect(found.structured.resources).toEqual([]);
      const board = await tool(clients.claw, 'update_swarm_shared_state', {
        board: 'private-board',
      });
      expect(board.structured.board.taskResults).toEqual({});
      const own = await tool(clients.code, 'update_swarm_shared_state', { board: 'private-board' });
      expect(own.structured.board.taskResults).toEqual({ draft: 'amber' });
    });

    it('DELETE /api/context refuses a bad key (400) and one with no value (404)', async () => {
      const bad = await call(hub.url, 'DELETE', '/api/context?key=/nope', {
        token: hub.tokens.code,
      });
      expect(bad.status).toBe(400);
      expect(bad.body.error.code).toBe('validation_failed');
      const missing = await call(hub.url, 'DELETE', '/api/context?key=resource/none', {
        token: hub.tokens.code,
      });
      expect(missing.status).toBe(404);
      expect(missing.body.error.code).toBe('not_found');
    });
  });
}

defineLayerTests('embedded store');

await withPostgres('layers over /mcp on PostgreSQL', (url, schemas) => {
  defineLayerTests('PostgreSQL', () =>
    startInProcessServe({ store: storeUrl(url, schemas.next('mcp_layers')) }),
  );
});
