import { createClient } from '@ctxbus/client';
import { call, openStream } from '@ctxbus/test-kit';
import { describe, expect, it } from 'vitest';
import { useInProcessHub } from './in-process-serve.ts';

const hub = useInProcessHub({
  tokens: {
    code: ['acme', 'claude-code'],
    chat: ['acme', 'openclaw'],
    rival: ['globex', 'openclaw'],
  },
});

const write = async (body: unknown, token = hub.tokens.code) => {
  const response = await call(hub.url, 'POST', '/api/context', { token, body });
  expect(response.status).toBe(201);
  return response.body.items as { id: string; seq: number; title: string }[];
};

describe('GET /api/stream', () => {
  it('pushes new items to every subscriber, filtered by tags and urgency', async () => {
    const everything = openStream(hub.url, hub.tokens.chat);
    const opsOnly = openStream(hub.url, hub.tokens.chat, { query: 'tags=ops' });
    const urgent = openStream(hub.url, hub.tokens.chat, { query: 'minUrgency=attention' });
    await Promise.all([everything.ready, opsOnly.ready, urgent.ready]);
    expect(await everything.status).toBe(200);
    await write({ type: 'discovery', title: 'plain' });
    await write({ type: 'alert', title: 'ops fire', relevanceTags: ['ops'], urgency: 'blocking' });
    await everything.waitFor(() => everything.items().length >= 2);
    await opsOnly.waitFor(() => opsOnly.items().length >= 1);
    await urgent.waitFor(() => urgent.items().length >= 1);
    expect(everything.items().map((event) => event.item.title)).toEqual(['plain', 'ops fire']);
    expect(opsOnly.items().map((event) => event.item.title)).toEqual(['ops fire']);
    expect(urgent.items().map((event) => event.item.title)).toEqual(['ops fire']);
    const [first] = everything.events.filter((event) => event.event === 'context-added');
    expect(first?.id).toBe(String(everything.items()[0]?.seq));
    for (const stream of [everything, opsOnly, urgent]) stream.close();
  });

  it('resumes after a disconnect with Last-Event-ID, with no gap and no repeat', async () => {
    const stream = openStream(hub.url, hub.tokens.chat);
    await stream.ready;
    await write({ type: 'status', title: 'r1' });
    await stream.waitFor(() => stream.items().length >= 1);
    const lastId = stream.events.filter((event) => event.id).at(-1)?.id ?? '';
    stream.close();
    // Written while nobody listens.
    await write([
      { type: 'status', title: 'r2' },
      { type: 'status', title: 'r3' },
    ]);
    await write({ type: 'status', title: 'r4' });
    const resumed = openStream(hub.url, hub.tokens.chat, { lastEventId: lastId });
    await resumed.waitFor(() => resumed.items().length >= 3);
    await write({ type: 'status', title: 'r5' });
    await resumed.waitFor(() => resumed.items().length >= 4);
    const titles = resumed.items().map((event) => event.item.title);
    expect(titles).toEqual(['r2', 'r3', 'r4', 'r5']);
    const seqs = resumed.items().map((event) => event.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    resumed.close();
  });

  it('replays from ?since= too, and sends consumption and supersession events', async () => {
    const [old] = await write({ type: 'decision', title: 'old decision' });
    const stream = openStream(hub.url, hub.tokens.chat, { query: `since=${(old?.seq ?? 1) - 1}` });
    await stream.waitFor(() => stream.items().length >= 1);
    await write({ type: 'decision', title: 'new decision', supersedes: old?.id });
    await call(hub.url, 'POST', `/api/context/${old?.id}/consume`, { token: hub.tokens.chat });
    await stream.waitFor(() => stream.items().length >= 4);
    expect(stream.items().map((event) => `${event.event}:${event.item.title}`)).toEqual([
      'context-added:old decision',
      'context-added:new decision',
      'context-superseded:old decision',
      'context-consumed:old decision',
    ]);
    stream.close();
  });

  it("never sends another team's items or another runtime's private items", async () => {
    const theirs = openStream(hub.url, hub.tokens.rival);
    const chatStream = openStream(hub.url, hub.tokens.chat);
    await Promise.all([theirs.ready, chatStream.ready]);
    await write({ type: 'discovery', title: 'secret plan', visibility: 'private' });
    await write({ type: 'discovery', title: 'team news' });
    await write({ type: 'discovery', title: 'globex news' }, hub.tokens.rival);
    // Barriers: a later item each stream must get. A stream delivers in sequence order, so a
    // wrongly routed event (an earlier sequence) would have come before its barrier.
    await write({ type: 'discovery', title: 'acme barrier' });
    await write({ type: 'discovery', title: 'globex barrier' }, hub.tokens.rival);
    const titles = (stream: typeof theirs) => stream.items().map((event) => event.item.title);
    await chatStream.waitFor(() => titles(chatStream).includes('acme barrier'));
    await theirs.waitFor(() => titles(theirs).includes('globex barrier'));
    expect(titles(chatStream)).toEqual(['team news', 'acme barrier']);
    expect(titles(theirs)).toEqual(['globex news', 'globex barrier']);
    theirs.close();
    chatStream.close();
  });

  it('rejects bad filters and missing tokens before streaming', async () => {
    const badFilter = await call(hub.url, 'GET', '/api/stream?minUrgency=urgent', {
      token: hub.tokens.chat,
    });
    expect(badFilter.status).toBe(400);
    expect(badFilter.body.error.message).toMatch(/^query\.minUrgency/);
    const noToken = await call(hub.url, 'GET', '/api/stream');
    expect(noToken.status).toBe(401);
    const badResume = await call(hub.url, 'GET', '/api/stream', {
      token: hub.tokens.chat,
      headers: { 'last-event-id': 'abc' },
    });
    expect(badResume.status).toBe(400);
  });

  it('works through @ctxbus/client, which resumes by itself', async () => {
    const client = createClient({ url: hub.url, token: hub.tokens.chat });
    const controller = new AbortController();
    const received: string[] = [];
    let readyCount = 0;
    const ready = new Promise<void>((resolve) => {
      void (async () => {
        for await (const event of client.stream({
          signal: controller.signal,
          type: 'alert',
          onReady: () => {
            readyCount += 1;
            resolve();
          },
        })) {
          received.push(event.item.title);
          if (received.length === 2) controller.abort();
        }
      })();
    });
    await ready;
    await write({ type: 'discovery', title: 'not an alert' });
    await write({ type: 'alert', title: 'alert one' });
    await write({ type: 'alert', title: 'alert two' });
    await expect.poll(() => received).toEqual(['alert one', 'alert two']);
    expect(readyCount).toBe(1);
  });
});
