import type { StreamOptions } from '@ctxbus/client';
import { createClient } from '@ctxbus/client';
import { DONE_TAGS } from '@ctxbus/core';
import type { StreamEvent } from '@ctxbus/core/contract';
import { silentLogger } from '@ctxbus/core/contract';
import { waitUntil } from '@ctxbus/test-kit';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ContextBackend } from '../context-backend.js';
import { createCtxbusMcpServer } from '../create-ctxbus-mcp-server.js';
import type { ConnectedClient, TestHub } from '../test-kit.js';
import { closedPortUrl, connectInMemory, startTestHub } from '../test-kit.js';
import { TASK_DONE_TAGS } from './active-tasks.js';
import { MAX_SUBSCRIBED_RESOURCES, ResourceSubscriptions } from './resource-subscriptions.js';

let hub: TestHub;
let mcp: ConnectedClient;

beforeAll(async () => {
  hub = await startTestHub();
  mcp = await connectInMemory(createCtxbusMcpServer({ backend: hub.client }));
});

afterAll(async () => {
  await mcp.close();
  await hub.close();
});

async function readText(uri: string): Promise<{ text: string; mimeType: string | undefined }> {
  const { contents } = await mcp.client.readResource({ uri });
  const first = contents[0];
  return { text: first && 'text' in first ? first.text : '', mimeType: first?.mimeType };
}

/** Live streams the hub is serving right now. */
const hubStreams = () => hub.running.hub.services.feed.subscriberCount;

/** Waits until the hub serves no live stream (it sees a disconnect a moment after it happens). */
const noHubStreams = () => waitUntil(() => hubStreams() === 0, 'the hub to serve no live stream');

describe('reading resources', () => {
  it('lists the three context resources and the item template', async () => {
    const { resources } = await mcp.client.listResources();
    const uris = resources.map((resource) => resource.uri);
    expect(uris).toEqual(
      expect.arrayContaining(['team-context://current', 'task://active', 'decisions://recent']),
    );
    const { resourceTemplates } = await mcp.client.listResourceTemplates();
    expect(resourceTemplates.map((template) => template.uriTemplate)).toEqual([
      'context://items/{id}',
    ]);
  });

  it('team-context://current is the shared bundle in Markdown', async () => {
    await hub.client.write({ type: 'decision', title: 'Bundle shows decisions' });
    const { text, mimeType } = await readText('team-context://current');
    expect(mimeType).toBe('text/markdown');
    expect(text).toContain('Bundle shows decisions');
    expect(text).toContain('claude-code');
  });

  it("team-context://current is in the runtime's own format: plain text for openclaw, as context_shared gives it", async () => {
    const token = await hub.mint('openclaw');
    const terse = await connectInMemory(
      createCtxbusMcpServer({ backend: createClient({ url: hub.url, token }) }),
    );
    try {
      await hub.client.write({ type: 'decision', title: 'Terse runtimes read plain text' });
      const { contents } = await terse.client.readResource({ uri: 'team-context://current' });
      const first = contents[0];
      expect(first?.mimeType).toBe('text/plain');
      const text = first && 'text' in first ? first.text : '';
      expect(text).toContain('Terse runtimes read plain text');
      expect(text).not.toMatch(/^# /m);
      const tool = await terse.client.callTool({ name: 'context_shared', arguments: {} });
      expect((tool.structuredContent as { format: string; text: string }).format).toBe('text');
      expect((tool.structuredContent as { text: string }).text).toBe(text);
    } finally {
      await terse.close();
    }
  });

  it('task://active holds the newest status of each open task', async () => {
    await hub.client.write({ type: 'status', title: 'T-1: started', scopeKey: 'task:T-1' });
    await hub.client.write({ type: 'status', title: 'T-1: tests green', scopeKey: 'task:T-1' });
    await hub.client.write({
      type: 'status',
      title: 'T-2: shipped',
      scopeKey: 'task:T-2',
      relevanceTags: ['done'],
    });
    await hub.client.write({
      type: 'status',
      title: 'T-3: waiting on review',
      scopeKey: 'task:T-3',
    });
    const { text } = await readText('task://active');
    expect(text).toContain('T-1: tests green');
    expect(text).toContain('T-3: waiting on review');
    expect(text).not.toContain('T-1: started');
    expect(text).not.toContain('T-2: shipped');
    expect(text.indexOf('T-3')).toBeLessThan(text.indexOf('T-1: tests green'));
  });

  it('the done tags are the shared bundle’s', () => {
    expect([...TASK_DONE_TAGS].sort()).toEqual([...DONE_TAGS].sort());
  });

  it('decisions://recent lists decisions in force, newest first', async () => {
    const old = await hub.client.write({ type: 'decision', title: 'Deploy on Fridays' });
    await hub.client.write({
      type: 'decision',
      title: 'Never deploy on Fridays',
      supersedes: old.items[0]?.id ?? '',
    });
    const { text } = await readText('decisions://recent');
    expect(text).toContain('Never deploy on Fridays');
    expect(text).not.toContain('- [decision] Deploy on Fridays');
  });

  it('context://items/{id} is one item as JSON; unknown and malformed ids are errors', async () => {
    const written = await hub.client.write({ type: 'discovery', title: 'Item resource' });
    const id = written.items[0]?.id ?? '';
    const { text, mimeType } = await readText(`context://items/${id}`);
    expect(mimeType).toBe('application/json');
    expect(JSON.parse(text)).toMatchObject({ id, title: 'Item resource', type: 'discovery' });

    await expect(
      mcp.client.readResource({ uri: 'context://items/019a0000-0000-7000-8000-00000000abcd' }),
    ).rejects.toMatchObject({ code: -32002, message: expect.stringMatching(/not found/) });
    await expect(mcp.client.readResource({ uri: 'context://items/nope' })).rejects.toThrow(
      /not an item URI/,
    );
  });

  it('a hub that is down makes reads fail with a clear error', async () => {
    const down = createClient({ url: await closedPortUrl(), token: hub.token, retries: 0 });
    const offline = await connectInMemory(createCtxbusMcpServer({ backend: down }));
    try {
      await expect(offline.client.readResource({ uri: 'task://active' })).rejects.toThrow(
        /reading task:\/\/active failed: the ctxbus hub is unavailable/,
      );
    } finally {
      await offline.close();
    }
  });
});

describe('subscriptions', () => {
  it('declares resources.subscribe', () => {
    expect(mcp.client.getServerCapabilities()?.resources?.subscribe).toBe(true);
  });

  it('notifies a subscriber of team-context://current when an item is written over REST', async () => {
    await noHubStreams();
    await mcp.client.subscribeResource({ uri: 'team-context://current' });
    expect(hubStreams()).toBe(1);
    await hub.client.write({ type: 'alert', title: 'CI is red on main', urgency: 'blocking' });
    await mcp.nextUpdate('team-context://current');

    await mcp.client.unsubscribeResource({ uri: 'team-context://current' });
    await noHubStreams();
    const count = mcp.updates.length;
    // The barrier: a subscription to decisions://recent, whose stream carries the next write
    // and then a decision. The decision's notification comes after any the write could cause.
    await mcp.client.subscribeResource({ uri: 'decisions://recent' });
    await hub.client.write({ type: 'alert', title: 'CI is green again' });
    await hub.client.write({ type: 'decision', title: 'Barrier: after the green build' });
    await mcp.nextUpdate('decisions://recent');
    // Nothing for team-context://current came before it.
    expect(mcp.updates.slice(count)).toEqual(['decisions://recent']);
    await mcp.client.unsubscribeResource({ uri: 'decisions://recent' });
  });

  it('notifies only the resources a change can affect', async () => {
    await mcp.client.subscribeResource({ uri: 'decisions://recent' });
    await mcp.client.subscribeResource({ uri: 'task://active' });
    const start = mcp.updates.length;
    await hub.client.write({ type: 'discovery', title: 'Neither a decision nor a task' });
    await hub.client.write({ type: 'status', title: 'T-9: begun', scopeKey: 'task:T-9' });
    // One stream carries both writes in order: a notification the discovery wrongly caused
    // would come before (or with) the status's.
    await mcp.nextUpdate('task://active');
    expect(mcp.updates.slice(start)).toEqual(['task://active']);

    await hub.client.write({ type: 'decision', title: 'Adopt the MCP server' });
    await mcp.nextUpdate('decisions://recent');
    // And none came late, before the decision's.
    expect(mcp.updates.slice(start)).toEqual(['task://active', 'decisions://recent']);
    await mcp.client.unsubscribeResource({ uri: 'decisions://recent' });
    await mcp.client.unsubscribeResource({ uri: 'task://active' });
  });

  it('notifies an item subscriber when the item is consumed or superseded', async () => {
    const written = await hub.client.write({ type: 'request', title: 'Review PR #311' });
    const id = written.items[0]?.id ?? '';
    const uri = `context://items/${id}`;
    await mcp.client.subscribeResource({ uri });
    await hub.client.consume(id);
    await mcp.nextUpdate(uri);
    await hub.client.write({ type: 'request', title: 'Review PR #312 instead', supersedes: id });
    await mcp.nextUpdate(uri);
    await mcp.client.unsubscribeResource({ uri });
  });

  it('refuses a subscription past the 256 resources a session may follow, naming the limit', async () => {
    const uris = Array.from(
      { length: MAX_SUBSCRIBED_RESOURCES },
      (_, index) => `context://items/019a0000-0000-7000-8000-${String(index).padStart(12, '0')}`,
    );
    for (const uri of uris) await mcp.client.subscribeResource({ uri });
    // Subscribing again to one it follows is no new resource.
    await mcp.client.subscribeResource({ uri: uris[0] as string });
    await expect(
      mcp.client.subscribeResource({ uri: 'context://items/019a0000-0000-7000-8000-999999999999' }),
    ).rejects.toMatchObject({
      code: -32600,
      message: expect.stringContaining(
        `this session follows ${MAX_SUBSCRIBED_RESOURCES} resources, the most it may; unsubscribe from one first`,
      ),
    });
    for (const uri of uris) await mcp.client.unsubscribeResource({ uri });
    await mcp.client.subscribeResource({ uri: 'decisions://recent' });
    await mcp.client.unsubscribeResource({ uri: 'decisions://recent' });
  });

  it('coalesces a burst of writes into few notifications', async () => {
    // task://active first: a change marks the subscribed URIs pending in this order, and
    // pending URIs are notified in the order they were marked (see the barrier below).
    await mcp.client.subscribeResource({ uri: 'task://active' });
    await mcp.client.subscribeResource({ uri: 'team-context://current' });
    const start = mcp.updates.length;
    const began = performance.now();
    await Promise.all(
      Array.from({ length: 30 }, (_, index) =>
        hub.client.write({ type: 'discovery', title: `Burst item ${index}` }),
      ),
    );
    await mcp.nextUpdate('team-context://current');
    // The barrier: a task status after the burst, on the same stream. It marks task://active
    // and team-context://current. If the burst's last notification was still pending, it goes
    // out first, then task://active; if it had gone out, task://active goes first, then the
    // barrier's own team-context://current. Either way the burst's notifications are the ones
    // before task://active.
    await hub.client.write({ type: 'status', title: 'T-7: after the burst', scopeKey: 'task:T-7' });
    await mcp.nextUpdate('task://active');
    const updates = mcp.updates.slice(start);
    const burst = updates.slice(0, updates.indexOf('task://active'));
    expect(new Set(burst)).toEqual(new Set(['team-context://current']));
    expect(burst.length).toBeGreaterThanOrEqual(1);
    // The rule, whatever the machine's load: one notification at once, then at most one per
    // interval (100 ms), so the burst's notifications cannot outnumber the intervals that
    // passed before the barrier's arrived (on a quiet machine: 2 or 3 for 30 writes).
    const elapsed = performance.now() - began;
    expect(burst.length).toBeLessThanOrEqual(1 + Math.floor(elapsed / 100));
    await mcp.client.unsubscribeResource({ uri: 'team-context://current' });
    await mcp.client.unsubscribeResource({ uri: 'task://active' });
  });

  it('refuses to subscribe to a resource that does not exist', async () => {
    await expect(mcp.client.subscribeResource({ uri: 'task://finished' })).rejects.toThrow(
      /cannot subscribe to task:\/\/finished: no such resource/,
    );
  });

  it('stops the live stream when the server closes', async () => {
    // Unsubscribing aborts a stream at once; the hub sees the disconnect a moment later.
    await noHubStreams();
    const other = await connectInMemory(createCtxbusMcpServer({ backend: hub.client }));
    await other.client.subscribeResource({ uri: 'decisions://recent' });
    expect(hubStreams()).toBe(1);
    await other.close();
    await noHubStreams();
  });

  it('a subscribe the hub refuses outright is an error', async () => {
    const wrong = createClient({ url: hub.url, token: 'cbx_not-a-token' });
    const rejected = await connectInMemory(createCtxbusMcpServer({ backend: wrong }));
    try {
      await expect(
        rejected.client.subscribeResource({ uri: 'team-context://current' }),
      ).rejects.toThrow(/cannot subscribe to team-context:\/\/current: the ctxbus hub rejected/);
    } finally {
      await rejected.close();
    }
  });

  it('a subscribe waits readyTimeoutMs for a live stream that never comes up, then stands', async () => {
    // Fake timers: the ready wait is the clock this test turns, not the wall clock.
    vi.useFakeTimers();
    try {
      const warnings: string[] = [];
      const neverReady = async function* (options?: StreamOptions): AsyncGenerator<StreamEvent> {
        const signal = options?.signal;
        await new Promise<void>((resolve) => signal?.addEventListener('abort', () => resolve()));
      };
      const subscriptions = new ResourceSubscriptions({
        backend: { stream: neverReady } as Pick<ContextBackend, 'stream'> as ContextBackend,
        logger: { ...silentLogger, warn: (_, message) => warnings.push(message ?? '') },
        notify: async () => {},
        readyTimeoutMs: 200,
      });
      let answered = false;
      const subscribed = subscriptions.subscribe('team-context://current').then(() => {
        answered = true;
      });
      await vi.advanceTimersByTimeAsync(199);
      expect(answered).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      await subscribed;
      expect(warnings).toEqual([
        'live updates are not connected yet; the subscription stands and the stream keeps retrying',
      ]);
      subscriptions.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it('notifies the first change at once, then at most once per interval (turned clock)', async () => {
    vi.useFakeTimers();
    try {
      // A stream this test feeds: each `push` is one change event on it.
      const queued: StreamEvent[] = [];
      let wake = () => {};
      const feed = async function* (options?: StreamOptions): AsyncGenerator<StreamEvent> {
        options?.onReady?.();
        while (!options?.signal?.aborted) {
          const event = queued.shift();
          if (event) yield event;
          else await new Promise<void>((resolve) => (wake = resolve));
        }
      };
      const push = (title: string) => {
        queued.push({ seq: 0, item: { id: title, type: 'discovery', title } } as StreamEvent);
        wake();
      };
      const sent: number[] = [];
      const subscriptions = new ResourceSubscriptions({
        backend: { stream: feed } as Pick<ContextBackend, 'stream'> as ContextBackend,
        logger: silentLogger,
        notify: async () => {
          sent.push(Date.now());
        },
        intervalMs: 100,
      });
      await subscriptions.subscribe('team-context://current');
      const start = Date.now();
      for (let index = 0; index < 30; index++) push(`burst ${index}`);
      await vi.advanceTimersByTimeAsync(0);
      expect(sent.map((at) => at - start)).toEqual([0]);
      // A change every 10 ms for 450 ms: one notification at the end of each 100 ms interval.
      for (let index = 0; index < 45; index++) {
        push(`steady ${index}`);
        await vi.advanceTimersByTimeAsync(10);
      }
      await vi.advanceTimersByTimeAsync(1_000);
      expect(sent.map((at) => at - start)).toEqual([0, 100, 200, 300, 400, 500]);
      // Quiet since: the next change is notified at once again.
      const later = Date.now();
      push('after a quiet spell');
      await vi.advanceTimersByTimeAsync(0);
      expect(sent.at(-1)).toBe(later);
      subscriptions.close();
      wake();
    } finally {
      vi.useRealTimers();
    }
  });

  it('a subscribe while the hub is down stands and does not hang', async () => {
    const down = createClient({ url: await closedPortUrl(), token: hub.token, retries: 0 });
    const warnings: string[] = [];
    const logger = {
      ...silentLogger,
      warn: (_: object, message?: string) => warnings.push(message ?? ''),
    };
    const offline = await connectInMemory(
      createCtxbusMcpServer({ backend: down, logger, updates: { readyTimeoutMs: 200 } }),
    );
    try {
      // It stands: the subscribe answers once the ready wait (200 ms) is over, saying so; the
      // stream keeps retrying behind it. Without that wait it would never answer.
      await offline.client.subscribeResource({ uri: 'team-context://current' });
      expect(warnings).toContain(
        'live updates are not connected yet; the subscription stands and the stream keeps retrying',
      );
    } finally {
      await offline.close();
    }
  });
});
