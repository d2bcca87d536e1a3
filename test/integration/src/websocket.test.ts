import { call, openWebSocketStream } from '@ctxbus/test-kit';
import { describe, expect, it } from 'vitest';
import { useInProcessHub } from './in-process-serve.ts';

const hub = useInProcessHub({
  tokens: { code: ['acme', 'claude-code'], chat: ['acme', 'openclaw'] },
});

const write = async (body: unknown) => {
  const response = await call(hub.url, 'POST', '/api/context', { token: hub.tokens.code, body });
  expect(response.status).toBe(201);
  return response.body.items as { id: string; seq: number }[];
};

describe('GET /api/stream/ws', () => {
  it('pushes filtered changes as JSON messages', async () => {
    const socket = openWebSocketStream(hub.url, hub.tokens.chat, { query: 'tags=ops' });
    await socket.ready;
    expect(await socket.status).toBe(101);
    await write({ type: 'discovery', title: 'unrelated' });
    await write({ type: 'alert', title: 'ops alert', relevanceTags: ['ops'] });
    await socket.waitFor(() => socket.items().length >= 1);
    expect(socket.items()).toEqual([
      expect.objectContaining({
        type: 'event',
        event: 'context-added',
        item: expect.objectContaining({ title: 'ops alert' }),
      }),
    ]);
    socket.close();
  });

  it('resumes with since and Last-Event-ID, with no gap and no repeat', async () => {
    const [first] = await write({ type: 'status', title: 'w1' });
    await write([
      { type: 'status', title: 'w2' },
      { type: 'status', title: 'w3' },
    ]);
    const bySince = openWebSocketStream(hub.url, hub.tokens.chat, {
      query: `type=status&since=${first?.seq}`,
    });
    await bySince.waitFor(() => bySince.items().length >= 2);
    expect(bySince.items().map((event) => event.item.title)).toEqual(['w2', 'w3']);
    bySince.close();
    const byHeader = openWebSocketStream(hub.url, hub.tokens.chat, {
      query: 'type=status',
      lastEventId: String(first?.seq),
    });
    await byHeader.waitFor(() => byHeader.items().length >= 2);
    await write({ type: 'status', title: 'w4' });
    await byHeader.waitFor(() => byHeader.items().length >= 3);
    expect(byHeader.items().map((event) => event.item.title)).toEqual(['w2', 'w3', 'w4']);
    byHeader.close();
  });

  it('refuses an upgrade without a valid token', async () => {
    const anonymous = openWebSocketStream(hub.url, null);
    expect(await anonymous.status).toBe(401);
    const revoked = openWebSocketStream(hub.url, 'cbx_not_a_token');
    expect(await revoked.status).toBe(401);
  });
});
