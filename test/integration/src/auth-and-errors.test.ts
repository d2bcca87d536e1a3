import { request as httpRequest } from 'node:http';
import type { Socket } from 'node:net';
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { call, runtimeToken, waitUntil } from '@ctxbus/test-kit';
import { describe, expect, it } from 'vitest';
import { useInProcessHub } from './in-process-serve.ts';

const hub = useInProcessHub({
  args: ['--max-body-bytes', '65536'],
  tokens: {
    code: ['acme', 'claude-code'],
    chat: ['acme', 'openclaw'],
    rival: ['globex', 'claude-code'],
    // A people's channel (an approver runtime by default).
    bot: ['acme', 'telegram'],
  },
});

const write = (body: unknown, token = hub.tokens.code) =>
  call(hub.url, 'POST', '/api/context', { token, body });

describe('authentication', () => {
  it('needs a valid bearer token on every /api route', async () => {
    const missing = await call(hub.url, 'GET', '/api/context');
    expect(missing.status).toBe(401);
    expect(missing.body.error.code).toBe('unauthorized');
    const wrongScheme = await call(hub.url, 'GET', '/api/context', {
      headers: { authorization: `Basic ${hub.tokens.code}` },
    });
    expect(wrongScheme.status).toBe(401);
    const unknown = await call(hub.url, 'GET', '/api/context', { token: 'cbx_notarealtoken' });
    expect(unknown.status).toBe(401);
    // A 401 says how to authenticate (RFC 9110), on the API, A2A and MCP alike.
    for (const path of ['/api/context', '/a2a', '/mcp']) {
      const refused = await fetch(`${hub.url}${path}`, {
        method: 'POST',
        headers: { authorization: 'Bearer cbx_notarealtoken', 'content-type': 'application/json' },
        body: '{}',
      });
      expect(refused.status, path).toBe(401);
      expect(refused.headers.get('www-authenticate'), path).toBe('Bearer realm="ctxbus"');
    }
    // A compressed body is refused by name, not read as bytes that are no JSON.
    const gzipped = await fetch(`${hub.url}/api/context`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${hub.tokens.code}`,
        'content-type': 'application/json',
        'content-encoding': 'gzip',
      },
      body: new Uint8Array(gzipSync(JSON.stringify({ type: 'status', title: 'zipped' }))),
    });
    expect(gzipped.status).toBe(415);
    expect(await gzipped.json()).toMatchObject({
      error: { code: 'unsupported_media_type', message: expect.stringContaining('gzip') },
    });
    const health = await call(hub.url, 'GET', '/health');
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ status: 'ok', store: 'sqlite' });
    // The newest sequence counts every team's writes: only a token the hub takes is shown it.
    expect(health.body).not.toHaveProperty('seq');
    const wrong = await call(hub.url, 'GET', '/health', { token: 'cbx_notarealtoken' });
    expect(wrong.status).toBe(200);
    expect(wrong.body).not.toHaveProperty('seq');
    const known = await call(hub.url, 'GET', '/health', { token: hub.tokens.code });
    expect(known.body.seq).toEqual(expect.any(Number));
  });

  it('keeps admin and runtime tokens to their own routes', async () => {
    const adminReads = await call(hub.url, 'GET', '/api/context', { token: hub.adminToken });
    expect(adminReads.status).toBe(403);
    expect(adminReads.body.error.message).toMatch(/runtime token/);
    const runtimeMints = await call(hub.url, 'POST', '/api/admin/tokens', {
      token: hub.tokens.code,
      body: { teamId: 'acme', runtime: 'web' },
    });
    expect(runtimeMints.status).toBe(403);
  });

  it('revokes a token at once and lists tokens without secrets', async () => {
    const doomed = await call(hub.url, 'POST', '/api/admin/tokens', {
      token: hub.adminToken,
      body: { teamId: 'acme', runtime: 'web', label: 'temporary' },
    });
    const secret = doomed.body.token as string;
    expect(secret).toMatch(/^cbx_/);
    expect((await call(hub.url, 'GET', '/api/context', { token: secret })).status).toBe(200);
    const listed = await call(hub.url, 'GET', '/api/admin/tokens?team=acme', {
      token: hub.adminToken,
    });
    expect(JSON.stringify(listed.body)).not.toContain(secret);
    expect(listed.body.tokens.map((token: { label: string | null }) => token.label)).toContain(
      'temporary',
    );
    const revoked = await call(hub.url, 'DELETE', `/api/admin/tokens/${doomed.body.info.id}`, {
      token: hub.adminToken,
    });
    expect(revoked.status).toBe(200);
    expect(revoked.body.token.revokedAt).not.toBeNull();
    expect((await call(hub.url, 'GET', '/api/context', { token: secret })).status).toBe(401);
    const gone = await call(hub.url, 'DELETE', '/api/admin/tokens/tok_nope', {
      token: hub.adminToken,
    });
    expect(gone.status).toBe(404);
  });
});

describe('isolation', () => {
  it("never shows a team another team's items", async () => {
    const mine = await write({
      type: 'decision',
      title: 'acme-only plan',
      relevanceTags: ['plan'],
    });
    const id = mine.body.items[0].id;
    expect(
      (await call(hub.url, 'GET', `/api/context/${id}`, { token: hub.tokens.rival })).status,
    ).toBe(404);
    const list = await call(hub.url, 'GET', '/api/context?limit=500', { token: hub.tokens.rival });
    expect(list.body.items.some((item: { id: string }) => item.id === id)).toBe(false);
    const search = await call(hub.url, 'POST', '/api/context/search', {
      token: hub.tokens.rival,
      body: { query: 'acme-only plan' },
    });
    expect(search.body.results).toEqual([]);
    const consume = await call(hub.url, 'POST', `/api/context/${id}/consume`, {
      token: hub.tokens.rival,
    });
    expect(consume.status).toBe(404);
    const shared = await call(hub.url, 'GET', '/api/context/shared', { token: hub.tokens.rival });
    expect(shared.body.formatted).not.toContain('acme-only plan');
    const supersede = await write(
      { type: 'decision', title: 'hijack', supersedes: id },
      hub.tokens.rival,
    );
    expect(supersede.status).toBe(422);
    // Reusing acme's id is the rival's own new item: ids say nothing across teams.
    const reuse = await write(
      { id, type: 'decision', title: 'acme-only plan', relevanceTags: ['plan'] },
      hub.tokens.rival,
    );
    expect(reuse.status).toBe(201);
    expect(reuse.body.items[0]).toMatchObject({ id, teamId: 'globex' });
    const ours = await call(hub.url, 'GET', `/api/context/${id}`, { token: hub.tokens.code });
    expect(ours.body.item).toMatchObject({ teamId: 'acme', title: 'acme-only plan' });
    expect(ours.body.item.seq).not.toBe(reuse.body.items[0].seq);
  });

  it('returns private items only to their source runtime', async () => {
    const secret = await write({
      type: 'discovery',
      title: 'private musing',
      visibility: 'private',
    });
    const id = secret.body.items[0].id;
    expect(
      (await call(hub.url, 'GET', `/api/context/${id}`, { token: hub.tokens.code })).status,
    ).toBe(200);
    expect(
      (await call(hub.url, 'GET', `/api/context/${id}`, { token: hub.tokens.chat })).status,
    ).toBe(404);
    const chatShared = await call(hub.url, 'GET', '/api/context/shared?runtime=openclaw', {
      token: hub.tokens.chat,
    });
    expect(chatShared.body.formatted).not.toContain('private musing');
    const chatSearch = await call(hub.url, 'POST', '/api/context/search', {
      token: hub.tokens.chat,
      body: { query: 'private musing' },
    });
    expect(chatSearch.body.results).toEqual([]);
  });
});

describe('bad input', () => {
  it('answers each kind of bad request with the right status and code', async () => {
    const cases: [string, Promise<{ status: number; body: any }>, number, string, RegExp?][] = [
      [
        'bad JSON',
        call(hub.url, 'POST', '/api/context', { token: hub.tokens.code, rawBody: '{"type":' }),
        400,
        'bad_json',
      ],
      [
        'empty body',
        call(hub.url, 'POST', '/api/context', { token: hub.tokens.code, rawBody: '' }),
        400,
        'bad_json',
      ],
      [
        'wrong content type',
        call(hub.url, 'POST', '/api/context', {
          token: hub.tokens.code,
          rawBody: 'type=decision',
          contentType: 'text/plain',
        }),
        415,
        'unsupported_media_type',
      ],
      ['missing title', write({ type: 'decision' }), 400, 'validation_failed', /^body\.title/],
      [
        'unknown field',
        write({ type: 'decision', title: 'x', color: 'red' }),
        400,
        'validation_failed',
        /color/,
      ],
      [
        'title too long',
        write({ type: 'decision', title: 'x'.repeat(301) }),
        400,
        'validation_failed',
        /^body\.title/,
      ],
      [
        'bad tag',
        write({ type: 'decision', title: 'x', relevanceTags: ['a b'] }),
        400,
        'validation_failed',
        /relevanceTags\[0\]/,
      ],
      [
        'past expiry',
        write({ type: 'status', title: 'x', expiresAt: '2020-01-01T00:00:00Z' }),
        400,
        'validation_failed',
        /expiresAt/,
      ],
      [
        'batch too big',
        write({ items: Array.from({ length: 501 }, () => ({ type: 'status', title: 'x' })) }),
        400,
        'validation_failed',
      ],
      ['a JSON string', write('hello'), 400, 'validation_failed'],
      [
        'null',
        call(hub.url, 'POST', '/api/context', { token: hub.tokens.code, rawBody: 'null' }),
        400,
        'validation_failed',
      ],
      [
        'unknown supersedes',
        write({ type: 'decision', title: 'x', supersedes: '019a0000-0000-7000-8000-00000000dead' }),
        422,
        'invalid_reference',
      ],
      [
        'oversized body',
        write({ type: 'discovery', title: 'big', content: 'x'.repeat(70_000) }),
        413,
        'payload_too_large',
      ],
      [
        'unknown query parameter',
        call(hub.url, 'GET', '/api/context?colour=red', { token: hub.tokens.code }),
        400,
        'validation_failed',
        /colour/,
      ],
      [
        'limit out of range',
        call(hub.url, 'GET', '/api/context?limit=100000', { token: hub.tokens.code }),
        400,
        'validation_failed',
        /query\.limit/,
      ],
      [
        'bad budget',
        call(hub.url, 'GET', '/api/context/shared?tokenBudget=-1', { token: hub.tokens.code }),
        400,
        'validation_failed',
        /tokenBudget/,
      ],
      [
        'unknown route',
        call(hub.url, 'GET', '/api/nothing', { token: hub.tokens.code }),
        404,
        'not_found',
      ],
      [
        'wrong method',
        call(hub.url, 'PATCH', '/api/context', { token: hub.tokens.code }),
        405,
        'method_not_allowed',
      ],
    ];
    for (const [name, promise, status, errorCode, message] of cases) {
      const response = await promise;
      expect(response.status, name).toBe(status);
      expect(response.body.error.code, name).toBe(errorCode);
      expect(typeof response.body.error.message, name).toBe('string');
      if (message) expect(response.body.error.message, name).toMatch(message);
    }
  });

  it('refuses what JSON.parse would change without a word: bytes not UTF-8, a key twice, a __proto__ key', async () => {
    const token = await runtimeToken(hub, 'strict-json', 'web');
    const send = (path: string, body: Uint8Array<ArrayBuffer> | string) =>
      fetch(`${hub.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body,
      }).then(async (response) => ({ status: response.status, body: await response.json() }));
    const utf8 = new TextEncoder();
    const notUtf8 = new Uint8Array([
      ...utf8.encode('{"type":"discovery","title":"strict '),
      0xff,
      0xfe,
      ...utf8.encode('"}'),
    ]);
    const cases: [string, string, Uint8Array<ArrayBuffer> | string, RegExp][] = [
      ['not UTF-8', '/api/context', notUtf8, /not valid UTF-8/],
      [
        'a key twice',
        '/api/context',
        '{"type":"discovery","title":"strict one","title":"strict two"}',
        /has the key "title" twice in one object/,
      ],
      [
        'a __proto__ key',
        '/api/context',
        '{"type":"discovery","title":"strict proto","runtimeOptions":{"__proto__":{"a":1},"b":2}}',
        /"__proto__" key/,
      ],
      [
        "a __proto__ key in a task's input",
        '/api/tasks',
        '{"title":"strict task","requiredCapabilities":["search"],"input":{"\\u005f_proto__":{"x":1},"y":2}}',
        /"__proto__" key/,
      ],
    ];
    for (const [name, path, body, message] of cases) {
      const refused = await send(path, body);
      expect(refused.status, name).toBe(400);
      expect(refused.body.error, name).toMatchObject({ code: 'bad_json', message });
    }
    const stored = await call(hub.url, 'GET', '/api/context?limit=50', { token });
    expect(stored.body.items).toEqual([]);
    const tasks = await call(hub.url, 'GET', '/api/tasks', { token });
    expect(tasks.body.tasks).toEqual([]);
    // A2A answers the same body with a JSON-RPC parse error.
    const rpc = await send('/a2a', notUtf8);
    expect(rpc.body.error).toMatchObject({ code: -32700, message: expect.stringMatching(/UTF-8/) });
  });

  it('limits bodies of unknown length (chunked) as it reads them', async () => {
    const token = await runtimeToken(hub, 'limits', 'web');
    const chunked = (parts: string[]) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const target = new URL(`${hub.url}/api/context`);
        const request = httpRequest(
          {
            host: target.hostname,
            port: target.port,
            path: target.pathname,
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          },
          (response) => {
            let body = '';
            response.setEncoding('utf8');
            response.on('data', (chunk: string) => {
              body += chunk;
            });
            response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
          },
        );
        request.on('error', reject);
        for (const part of parts) request.write(part);
        request.end();
      });
    const big = await chunked([
      '{"type":"discovery","title":"big","content":"',
      ...Array.from({ length: 8 }, () => 'x'.repeat(10_000)),
      '"}',
    ]);
    expect(big.status).toBe(413);
    expect(JSON.parse(big.body).error.code).toBe('payload_too_large');
    const small = await chunked(['{"type":"discovery",', '"title":"small, chunked"}']);
    expect(small.status, small.body).toBe(201);
  });

  /** Clients that announce a full-size body with `token`, send a few bytes of it, then stall. */
  const stallBodies = (count: number, token: string, path = '/api/context') => {
    const target = new URL(hub.url);
    return Promise.all(
      Array.from(
        { length: count },
        () =>
          new Promise<Socket>((resolve, reject) => {
            const socket = connect(Number(target.port), target.hostname, () => {
              socket.write(
                `POST ${path} HTTP/1.1\r\nHost: ${target.host}\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 65536\r\n\r\n{"type":`,
                () => resolve(socket),
              );
            });
            socket.on('error', reject);
          }),
      ),
    );
  };

  it('lets one token hold at most 8 full-size bodies at once: its next write is 429, other tokens write on', async () => {
    const stuck = await runtimeToken(hub, 'limits', 'web');
    const other = await runtimeToken(hub, 'limits', 'telegram');
    const stalled = await stallBodies(8, stuck);
    try {
      let refused: Awaited<ReturnType<typeof write>> | undefined;
      await waitUntil(async () => {
        refused = await write({ type: 'status', title: 'a ninth body' }, stuck);
        return refused.status === 429;
      }, "the stalling token's next write to be refused");
      expect(refused?.body.error).toMatchObject({
        code: 'limit_reached',
        message: expect.stringContaining('this token has 8 request bodies'),
      });
      expect(refused?.headers.get('retry-after')).toBe('1');
      // The same token spelled another way is the same token.
      const respelled = await call(hub.url, 'POST', '/api/context', {
        headers: { authorization: `bearer   ${stuck}` },
        body: { type: 'status', title: 'respelled' },
      });
      expect(respelled.status).toBe(429);
      // Another runtime's writes, and the stalling token's reads, are served meanwhile.
      expect((await write({ type: 'status', title: 'another runtime' }, other)).status).toBe(201);
      expect((await call(hub.url, 'GET', '/api/context?limit=1', { token: stuck })).status).toBe(
        200,
      );
    } finally {
      for (const socket of stalled) socket.destroy();
    }
    await waitUntil(
      async () => (await write({ type: 'status', title: 'after the stall' }, stuck)).status === 201,
      "the token's writes to be taken again once its stalled bodies ended",
    );
  });

  it("counts /mcp's uploads in the same budget: 8 stalled there leave the token no ninth body", async () => {
    const stuck = await runtimeToken(hub, 'limits-mcp', 'web');
    const stalled = await stallBodies(8, stuck, '/mcp');
    try {
      let refused: Awaited<ReturnType<typeof write>> | undefined;
      await waitUntil(async () => {
        refused = await write({ type: 'status', title: 'a ninth body' }, stuck);
        return refused.status === 429;
      }, "the token's next write, beside its 8 stalled /mcp uploads, to be refused");
      expect(refused?.body.error).toMatchObject({ code: 'limit_reached' });
      // On /mcp itself the hub's refusals are JSON-RPC errors, as MCP clients read them.
      const mcp = await call(hub.url, 'POST', '/mcp', { token: stuck, body: { jsonrpc: '2.0' } });
      expect(mcp.status).toBe(429);
      expect(mcp.headers.get('retry-after')).toBe('1');
      expect(mcp.body).toMatchObject({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32000, data: { code: 'limit_reached' } },
      });
    } finally {
      for (const socket of stalled) socket.destroy();
    }
    const oversized = await call(hub.url, 'POST', '/mcp', {
      token: stuck,
      rawBody: `{"pad":"${'x'.repeat(70_000)}"}`,
    });
    expect(oversized.status).toBe(413);
    expect(oversized.body).toMatchObject({
      jsonrpc: '2.0',
      error: { code: -32000, message: expect.stringMatching(/larger than 65536 bytes/) },
    });
  });

  it("lets one team's tokens hold at most 16 bodies at once: another team writes on", async () => {
    const tokens = await Promise.all(
      ['web', 'telegram', 'codex'].map((runtime) => runtimeToken(hub, 'limits-team', runtime)),
    );
    const mate = await runtimeToken(hub, 'limits-team', 'claude-code');
    const other = await runtimeToken(hub, 'limits-other', 'web');
    // 16 stalled, then the team's third token is refused its bodies.
    const stalled = [
      ...(await stallBodies(8, tokens[0] as string)),
      ...(await stallBodies(8, tokens[1] as string)),
    ];
    try {
      let refused: Awaited<ReturnType<typeof write>> | undefined;
      await waitUntil(async () => {
        refused = await write({ type: 'status', title: 'a 17th body' }, mate);
        return refused.status === 429;
      }, "a write of the team's fourth token to be refused while 16 of its bodies stall");
      expect(refused?.body.error).toMatchObject({
        code: 'limit_reached',
        message: expect.stringContaining("this team's tokens have 16 request bodies"),
      });
      expect((await write({ type: 'status', title: 'another team' }, other)).status).toBe(201);
    } finally {
      for (const socket of stalled) socket.destroy();
    }
    await waitUntil(
      async () => (await write({ type: 'status', title: 'after the stall' }, mate)).status === 201,
      "the team's writes to be taken again once its stalled bodies ended",
    );
  });

  it('holds at most 32 bodies of the largest size at once: past that a request is 503 at once, until they end', async () => {
    // Two teams of two tokens: no one team may hold more than 16.
    const tokens = await Promise.all(
      [
        ['limits-all', 'web'],
        ['limits-all', 'telegram'],
        ['limits-all-2', 'codex'],
        ['limits-all-2', 'openclaw'],
      ].map(([team, runtime]) => runtimeToken(hub, team as string, runtime as string)),
    );
    const token = await runtimeToken(hub, 'limits-all-3', 'claude-code');
    const stalled = (await Promise.all(tokens.map((each) => stallBodies(8, each)))).flat();
    try {
      let refused: Awaited<ReturnType<typeof write>> | undefined;
      await waitUntil(async () => {
        refused = await write({ type: 'status', title: 'while bodies stall' }, token);
        return refused.status === 503;
      }, 'a write to be refused while 32 full-size bodies arrive');
      expect(refused?.body.error).toMatchObject({
        code: 'unavailable',
        message: expect.stringContaining('request bodies'),
      });
      expect(refused?.headers.get('retry-after')).toBe('1');
      // Reads carry no body and are served meanwhile.
      expect((await call(hub.url, 'GET', '/api/context?limit=1', { token })).status).toBe(200);
    } finally {
      for (const socket of stalled) socket.destroy();
    }
    await waitUntil(
      async () => (await write({ type: 'status', title: 'after the stall' }, token)).status === 201,
      'writes to be taken again once the stalled bodies ended',
    );
  });

  it("answers what Node's HTTP parser refuses (headers over 16 KiB, bytes that are not HTTP) in the API's error shape", async () => {
    const target = new URL(hub.url);
    const raw = (request: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(Number(target.port), target.hostname, () => socket.write(request));
        let received = '';
        socket.on('data', (chunk) => {
          received += chunk.toString('utf8');
        });
        socket.on('end', () => resolve(received));
        socket.on('error', reject);
      });
    const query = Array.from({ length: 3_000 }, (_, index) => `t${index}=x`).join('&');
    const long = await raw(`GET /api/context?${query} HTTP/1.1\r\nHost: ${target.host}\r\n\r\n`);
    expect(long).toMatch(/^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/);
    expect(JSON.parse(long.slice(long.indexOf('\r\n\r\n') + 4))).toEqual({
      error: {
        code: 'headers_too_large',
        message: 'the request line and headers are larger than the hub takes (16 KiB)',
      },
    });
    const garbage = await raw('HELLO THERE\r\n\r\n');
    expect(garbage).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(JSON.parse(garbage.slice(garbage.indexOf('\r\n\r\n') + 4)).error.code).toBe(
      'validation_failed',
    );
  });

  it("keeps secrets out of labels and instance ids: a subscription's and a token's label redacted, an instance id refused", async () => {
    const secret = 'ghp_abcdefghijklmnopqrstuvwxyz0123456789AB';
    const token = await runtimeToken(hub, 'labels', 'web');
    const announced = await call(hub.url, 'POST', '/api/presence', {
      token,
      body: { instanceId: `laptop-${secret}`, kind: 'worker', capabilities: [], ttlSeconds: 30 },
    });
    expect(announced.status).toBe(400);
    expect(announced.body.error.details).toMatchObject({
      field: 'instanceId',
      reason: 'secret_in_identifier',
    });
    const subscribed = await call(hub.url, 'POST', '/api/subscriptions', {
      token,
      body: { delivery: 'pull', label: `poller ${secret}` },
    });
    expect(subscribed.status).toBe(201);
    expect(subscribed.body.subscription.label).toMatch(/^poller \[REDACTED:[a-z_-]+\]$/);
    const minted = await call(hub.url, 'POST', '/api/admin/tokens', {
      token: hub.adminToken,
      body: { teamId: 'labels', runtime: 'cli', label: `ci ${secret}` },
    });
    expect(minted.status).toBe(201);
    expect(minted.body.info.label).toMatch(/^ci \[REDACTED:[a-z_-]+\]$/);
    const listed = await call(hub.url, 'GET', '/api/admin/tokens?team=labels', {
      token: hub.adminToken,
    });
    expect(JSON.stringify(listed.body)).not.toContain(secret);
  });

  it('answers pipelined requests past 8 under way on one connection with 429 at once, in order', async () => {
    const token = await runtimeToken(hub, 'pipelined', 'web');
    const target = new URL(hub.url);
    const count = 60;
    const request = `GET /api/context?limit=500 HTTP/1.1\r\nHost: ${target.host}\r\nAuthorization: Bearer ${token}\r\n\r\n`;
    // Sixty requests in one write, the answers read only once all were sent.
    const received = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(target.port), target.hostname, () => {
        socket.write(request.repeat(count - 1));
        socket.write(request.replace('HTTP/1.1\r\n', 'HTTP/1.1\r\nConnection: close\r\n'));
      });
      let text = '';
      socket.on('data', (chunk) => {
        text += chunk.toString('utf8');
      });
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    const statuses = [...received.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) =>
      Number(match[1]),
    );
    expect(statuses).toHaveLength(count);
    expect(new Set(statuses)).toEqual(new Set([200, 429]));
    expect(statuses.filter((status) => status === 200).length).toBeGreaterThanOrEqual(1);
    expect(received).toContain(
      'this connection has 8 requests under way (pipelined): read their answers before sending more',
    );
    // One request at a time on a connection is never refused.
    for (let index = 0; index < 20; index++) {
      expect((await call(hub.url, 'GET', '/api/context?limit=1', { token })).status).toBe(200);
    }
  });

  it('keeps serving and keeps every stored item intact after all that', async () => {
    const before = await call(hub.url, 'GET', '/api/context?limit=500&includeSuperseded=true', {
      token: hub.tokens.code,
    });
    for (let index = 0; index < 20; index++) {
      await call(hub.url, 'POST', '/api/context', {
        token: hub.tokens.code,
        rawBody: `{"type":"decision","title":${'['.repeat(index * 50)}`,
      });
      await write({
        type: 'decision',
        title: `\u0000${'\u{1F600}'.repeat(index)}`,
        content: '\uD800',
      });
    }
    const after = await call(hub.url, 'GET', '/api/context?limit=500&includeSuperseded=true', {
      token: hub.tokens.code,
    });
    const kept = after.body.items.filter((item: { id: string }) =>
      before.body.items.some((old: { id: string }) => old.id === item.id),
    );
    expect(kept).toEqual(before.body.items);
    expect((await call(hub.url, 'GET', '/health')).status).toBe(200);
  });
});

describe('the OpenAPI document', () => {
  it('describes every route, and every route behaves as it says', async () => {
    const document = await call(hub.url, 'GET', '/api/openapi.json', { token: hub.tokens.code });
    expect(document.status).toBe(200);
    expect(document.body.openapi).toBe('3.1.0');
    const operations = Object.entries(
      document.body.paths as Record<string, Record<string, any>>,
    ).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({ path, method, operation })),
    );
    expect(operations.map((entry) => entry.operation.operationId).sort()).toEqual(
      [
        'a2aJsonRpc',
        'a2aRuntimeJsonRpc',
        'acknowledgeChanges',
        'announcePresence',
        'consumeContextItem',
        'contextAnalytics',
        'reportInjections',
        'createSubscription',
        'createToken',
        'deleteSubscription',
        'getSubscription',
        'listArchive',
        'listAudit',
        'listDeadLetters',
        'listSubscriptions',
        'pendingChanges',
        'getAgentCard',
        'getCapabilities',
        'getContextItem',
        'resolveContextItem',
        'getRuntimeAgentCard',
        'health',
        'leavePresence',
        'listContext',
        'listTokens',
        'openapi',
        'revokeToken',
        'searchContext',
        'sharedContext',
        'streamContext',
        'streamStats',
        'taskStats',
        'streamContextWebSocket',
        'verifyAudit',
        'writeContext',
        'createTask',
        'listTasks',
        'getTask',
        'cancelTask',
        'claimTask',
        'renewTask',
        'startTask',
        'completeTask',
        'failTask',
        'taskProgress',
        'approvalKey',
        'requestApproval',
        'requestPermission',
        'approveTask',
        'denyTask',
        'recordRefusedDecision',
        'updateTask',
        'forgetKey',
        'listConflicts',
        'resolveConflict',
      ].sort(),
    );
    // Route conformance, driven by the document: every secured route refuses a missing token,
    // every route with a body refuses bad JSON, every route with an {id} answers 404 for an unknown one.
    for (const { path, method, operation } of operations) {
      const unknownId = path.includes('tokens')
        ? 'tok_unknown'
        : path.includes('/tasks/')
          ? 'task_019a0000-0000-7000-8000-00000000beef'
          : path.includes('subscriptions')
            ? 'sub_019a0000-0000-7000-8000-00000000beef'
            : '019a0000-0000-7000-8000-00000000beef';
      const concrete = path.replace('{id}', unknownId);
      if (operation.security.length > 0) {
        const response = await call(hub.url, method.toUpperCase(), concrete);
        expect(response.status, `${method} ${path} without a token`).toBe(401);
      }
      // Decisions are people's: an agent's token is refused (403) before the task or conflict is
      // looked up, so the unknown id is tried with the admin token (which names the team).
      const decision = ['approveTask', 'denyTask', 'resolveConflict'].includes(
        operation.operationId,
      );
      // A channel's record of a refusal it made: an approver runtime's token.
      const token =
        path.includes('/admin/') || decision
          ? hub.adminToken
          : operation.operationId === 'recordRefusedDecision'
            ? hub.tokens.bot
            : hub.tokens.code;
      if (operation.requestBody && !path.includes('{id}')) {
        const response = await call(hub.url, method.toUpperCase(), concrete, {
          token,
          rawBody: '{',
        });
        expect(response.status, `${method} ${path} with bad JSON`).toBe(400);
        expect(response.body.error.code).toBe('bad_json');
      }
      if (path.includes('{id}')) {
        // A valid body where one is needed, so that the unknown id is what fails.
        const bodies: Record<string, unknown> = {
          acknowledgeChanges: { seq: 0 },
          cancelTask: {},
          renewTask: { token: 1 },
          startTask: { token: 1 },
          completeTask: { token: 1, result: {} },
          failTask: { token: 1, error: { code: 'x', message: 'x' } },
          taskProgress: { token: 1, output: '' },
          updateTask: { state: 'CANCELED' },
          requestApproval: {
            token: 1,
            request: { argv: ['ls'], cwd: '/tmp', scriptHash: null, because: 'not_allowed' },
          },
          approveTask: { team: 'acme' },
          denyTask: { team: 'acme' },
          recordRefusedDecision: { decision: 'approve', by: 'user 1', reason: 'not_an_approver' },
          resolveConflict: { team: 'acme', keep: '019a0000-0000-7000-8000-00000000beef' },
        };
        const body = bodies[operation.operationId];
        const response = await call(hub.url, method.toUpperCase(), concrete, { token, body });
        expect(response.status, `${method} ${path} with an unknown id`).toBe(404);
      }
      for (const status of Object.keys(operation.responses)) {
        // 101 Switching Protocols is the success of a WebSocket upgrade, and only of one.
        const lowest = path.endsWith('/ws') ? 101 : 200;
        expect(Number(status), `${method} ${path}`).toBeGreaterThanOrEqual(lowest);
      }
    }
  });
});
