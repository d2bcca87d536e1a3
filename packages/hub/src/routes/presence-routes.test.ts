import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Store } from '@ctxbus/store';
import { openSqliteStore } from '@ctxbus/store';
import { removeDir, tempDir } from '@ctxbus/test-kit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mintToken } from '../auth.js';
import type { Hub } from '../create-hub.js';
import { createHub } from '../create-hub.js';

// Presence through the hub's routes, on the hub's injected clock (expiry is turned, not waited).

let now: number;
let store: Store;
let hub: Hub;
let dir: string;
const tokens: Record<string, string> = {};

async function request(method: string, path: string, token: string | null, body?: unknown) {
  const response = await hub.app.request(path, {
    method,
    headers: {
      ...(token && { authorization: `Bearer ${token}` }),
      ...(body !== undefined && { 'content-type': 'application/json' }),
    },
    ...(body !== undefined && { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as any };
}

beforeEach(async () => {
  now = Date.parse('2026-03-01T10:00:00.000Z');
  dir = tempDir('ctxbus-presence-');
  writeFileSync(
    join(dir, 'capabilities.yaml'),
    `version: 1
runtimes:
  claude-code:
    description: Claude Code in a terminal
    trust: trusted
    capabilities:
      code_execution: { mode: native, via: Bash, limits: { seconds: 600 } }
  openclaw:
    description: OpenClaw on Telegram
    capabilities:
      code_execution: { mode: via-api, via: remote-exec, target: claude-code }
remote_execution:
  allow: ["npm test"]
`,
  );
  store = openSqliteStore({ path: ':memory:' });
  hub = await createHub({
    store,
    clock: () => new Date(now),
    validateResponses: true,
    capabilities: { file: join(dir, 'capabilities.yaml'), pollMs: 0 },
    presence: { maxInstancesPerTeam: 3, sweepIntervalMs: 0 },
  });
  for (const [name, teamId, runtime] of [
    ['code', 'acme', 'claude-code'],
    ['claw', 'acme', 'openclaw'],
    ['web', 'acme', 'web'],
    ['other', 'globex', 'claude-code'],
  ] as const) {
    tokens[name] = (await mintToken(store, { role: 'runtime', teamId, runtime })).token;
  }
  tokens.admin = (await mintToken(store, { role: 'admin', teamId: null, runtime: null })).token;
});

afterEach(async () => {
  await hub.close();
  await store.close();
  removeDir(dir);
});

const runtimeOf = (body: any, id: string) =>
  (body.runtimes as any[]).find((runtime) => runtime.id === id);

describe('presence', () => {
  it('announce -> online in GET /api/capabilities; heartbeat extends; expiry takes it off', async () => {
    const announced = await request('POST', '/api/presence', tokens.code as string, {
      instanceId: 'laptop:4242',
      kind: 'worker',
      capabilities: ['code_execution'],
      capacity: 2,
      ttlSeconds: 30,
    });
    expect(announced).toEqual({
      status: 200,
      body: {
        instanceId: 'laptop:4242',
        runtime: 'claude-code',
        expiresAt: '2026-03-01T10:00:30.000Z',
      },
    });
    let view = await request('GET', '/api/capabilities', tokens.claw as string);
    expect(view.status).toBe(200);
    expect(view.body.team).toBe('acme');
    expect(runtimeOf(view.body, 'claude-code')).toMatchObject({
      declared: true,
      trust: 'trusted',
      capabilities: {
        code_execution: { mode: 'native', via: 'Bash', limits: { seconds: 600 } },
      },
      presence: {
        online: true,
        workers: 1,
        capacity: 2,
        instances: [
          {
            instanceId: 'laptop:4242',
            kind: 'worker',
            capabilities: ['code_execution'],
            capacity: 2,
            lastSeen: '2026-03-01T10:00:00.000Z',
            expiresAt: '2026-03-01T10:00:30.000Z',
          },
        ],
      },
    });
    expect(runtimeOf(view.body, 'openclaw').presence).toEqual({
      online: false,
      workers: 0,
      capacity: 0,
      instances: [],
    });
    expect(view.body.remoteExecution).toEqual({ allow: ['npm test'], workdir: null });

    now += 25_000;
    const renewed = await request('POST', '/api/presence', tokens.code as string, {
      instanceId: 'laptop:4242',
      kind: 'worker',
      capacity: 2,
    });
    expect(renewed.body.expiresAt).toBe('2026-03-01T10:00:55.000Z');
    now += 25_000;
    view = await request('GET', '/api/capabilities', tokens.code as string);
    expect(runtimeOf(view.body, 'claude-code').presence.online).toBe(true);
    now += 5_000;
    view = await request('GET', '/api/capabilities', tokens.code as string);
    expect(runtimeOf(view.body, 'claude-code').presence).toMatchObject({
      online: false,
      instances: [],
    });
  });

  it('DELETE takes an instance off at once; a second DELETE is 404', async () => {
    await request('POST', '/api/presence', tokens.claw as string, {
      instanceId: 'bot',
      kind: 'adapter',
    });
    // Another runtime of the team cannot remove it.
    expect((await request('DELETE', '/api/presence/bot', tokens.code as string)).status).toBe(404);
    expect(await request('DELETE', '/api/presence/bot', tokens.claw as string)).toEqual({
      status: 200,
      body: { instanceId: 'bot', removed: true },
    });
    const view = await request('GET', '/api/capabilities', tokens.claw as string);
    expect(runtimeOf(view.body, 'openclaw').presence.online).toBe(false);
    const again = await request('DELETE', '/api/presence/bot', tokens.claw as string);
    expect(again.status).toBe(404);
    expect(again.body.error.code).toBe('not_found');
  });

  it("one team never sees another's presence", async () => {
    await request('POST', '/api/presence', tokens.other as string, {
      instanceId: 'globex-box',
      kind: 'worker',
    });
    await request('POST', '/api/presence', tokens.code as string, {
      instanceId: 'acme-box',
      kind: 'worker',
    });
    const acme = await request('GET', '/api/capabilities', tokens.code as string);
    expect(
      runtimeOf(acme.body, 'claude-code').presence.instances.map((i: any) => i.instanceId),
    ).toEqual(['acme-box']);
    const globex = await request('GET', '/api/capabilities', tokens.other as string);
    expect(
      runtimeOf(globex.body, 'claude-code').presence.instances.map((i: any) => i.instanceId),
    ).toEqual(['globex-box']);
    const asked = await request('GET', '/api/capabilities?team=globex', tokens.code as string);
    expect(asked.status).toBe(403);
    expect(asked.body.error.code).toBe('forbidden');
    // Admin tokens pick a team; without one they see the matrix and no presence.
    const admin = await request('GET', '/api/capabilities?team=globex', tokens.admin as string);
    expect(runtimeOf(admin.body, 'claude-code').presence.workers).toBe(1);
    expect(runtimeOf(admin.body, 'claude-code').presence.instances[0].instanceId).toBe(
      'globex-box',
    );
    const adminAll = await request('GET', '/api/capabilities', tokens.admin as string);
    expect(adminAll.body.team).toBeNull();
    expect(runtimeOf(adminAll.body, 'claude-code').presence.online).toBe(false);
  });

  it('a runtime present but not in the file appears, marked undeclared', async () => {
    await request('POST', '/api/presence', tokens.web as string, {
      instanceId: 'tab-1',
      kind: 'adapter',
    });
    const view = await request('GET', '/api/capabilities', tokens.web as string);
    expect(view.body.runtimes.map((runtime: any) => [runtime.id, runtime.declared])).toEqual([
      ['claude-code', true],
      ['openclaw', true],
      ['web', false],
    ]);
    expect(runtimeOf(view.body, 'web')).toMatchObject({
      description: null,
      capabilities: {},
      presence: { online: true, workers: 0, capacity: 0 },
    });
  });

  it('the runtime comes from the token: a body naming another runtime is 403', async () => {
    const response = await request('POST', '/api/presence', tokens.claw as string, {
      instanceId: 'sneaky',
      kind: 'worker',
      runtime: 'claude-code',
    });
    expect(response.status).toBe(403);
    expect(response.body.error.code).toBe('forbidden');
    const view = await request('GET', '/api/capabilities', tokens.code as string);
    expect(runtimeOf(view.body, 'claude-code').presence.online).toBe(false);
    // Naming its own runtime is fine.
    const own = await request('POST', '/api/presence', tokens.claw as string, {
      instanceId: 'honest',
      kind: 'adapter',
      runtime: 'openclaw',
    });
    expect(own.status).toBe(200);
  });

  it('an instance id held by another runtime of the team is a conflict', async () => {
    await request('POST', '/api/presence', tokens.code as string, {
      instanceId: 'x',
      kind: 'worker',
    });
    const taken = await request('POST', '/api/presence', tokens.claw as string, {
      instanceId: 'x',
      kind: 'worker',
    });
    expect(taken.status).toBe(409);
    expect(taken.body.error.code).toBe('conflict');
  });

  it('past the per-team cap a new instance is 429 limit_reached; another team is unaffected', async () => {
    for (const instanceId of ['a', 'b', 'c']) {
      const ok = await request('POST', '/api/presence', tokens.code as string, {
        instanceId,
        kind: 'worker',
      });
      expect(ok.status).toBe(200);
    }
    const over = await request('POST', '/api/presence', tokens.code as string, {
      instanceId: 'd',
      kind: 'worker',
    });
    expect(over.status).toBe(429);
    expect(over.body.error).toMatchObject({ code: 'limit_reached', details: { limit: 3 } });
    const elsewhere = await request('POST', '/api/presence', tokens.other as string, {
      instanceId: 'd',
      kind: 'worker',
    });
    expect(elsewhere.status).toBe(200);
  });

  it.each([
    ['no instance id', { kind: 'worker' }, 'validation_failed'],
    ['a bad instance id', { instanceId: '../etc', kind: 'worker' }, 'validation_failed'],
    ['an unknown kind', { instanceId: 'a', kind: 'robot' }, 'validation_failed'],
    [
      'a ttl over the bound',
      { instanceId: 'a', kind: 'worker', ttlSeconds: 601 },
      'validation_failed',
    ],
    ['a ttl of zero', { instanceId: 'a', kind: 'worker', ttlSeconds: 0 }, 'validation_failed'],
    ['a negative capacity', { instanceId: 'a', kind: 'worker', capacity: -1 }, 'validation_failed'],
    [
      'a bad capability name',
      { instanceId: 'a', kind: 'worker', capabilities: ['Run Code'] },
      'validation_failed',
    ],
    ['an unknown field', { instanceId: 'a', kind: 'worker', team: 'globex' }, 'validation_failed'],
    ['bad JSON', '{"instanceId":', 'bad_json'],
  ])('%s is a 400 with a code', async (_name, body, code) => {
    const response = await request('POST', '/api/presence', tokens.code as string, body);
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe(code);
  });

  it('needs a runtime token: none is 401, an admin token 403', async () => {
    const body = { instanceId: 'a', kind: 'worker' };
    expect((await request('POST', '/api/presence', null, body)).status).toBe(401);
    expect((await request('POST', '/api/presence', tokens.admin as string, body)).status).toBe(403);
    expect((await request('GET', '/api/capabilities', null)).status).toBe(401);
  });
});

describe('a hub without a capabilities file', () => {
  it('serves an empty matrix and says so in /health', async () => {
    const bare = await createHub({ store, validateResponses: true });
    try {
      const health = await bare.app.request('/health');
      expect(((await health.json()) as any).capabilities).toEqual({
        file: null,
        status: 'empty',
        loadedAt: null,
        digest: null,
        runtimes: 0,
        error: null,
      });
      const view = await bare.app.request('/api/capabilities', {
        headers: { authorization: `Bearer ${tokens.code}` },
      });
      const body = (await view.json()) as any;
      expect(body.runtimes).toEqual([]);
      expect(body.capabilityNames).toEqual([
        'code_execution',
        'file_operations',
        'search',
        'communication',
        'memory',
      ]);
    } finally {
      await bare.close();
    }
  });
});
