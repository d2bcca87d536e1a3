import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { wireRoutes } from '@ctxbus/core/contract';
import { stableId } from '@ctxbus/core/light';
import { mintToken, startHub } from '@ctxbus/hub';
import type { InProcessHub } from '@ctxbus/test-kit/in-process-hub';
import { startInProcessHub } from '@ctxbus/test-kit/in-process-hub';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHubLite, HubRequestError, LITE_ROUTES } from './hub-lite.js';
import { flushOutbox, pendingCount, queueItems, REJECTED } from './outbox.js';

let running: InProcessHub<'own'>;
let token: string;
let stateDir: string;

beforeAll(async () => {
  running = await startInProcessHub(
    { startHub, mintToken },
    { tokens: { own: ['acme', 'openclaw'] } },
  );
  token = running.tokens.own;
  stateDir = mkdtempSync(join(tmpdir(), 'ctxbus-outbox-'));
});

afterAll(async () => {
  await running.close();
  rmSync(stateDir, { recursive: true, force: true });
});

describe('@ctxbus/client/light', () => {
  it('calls routes of the wire table, as the table has them', () => {
    for (const [operationId, route] of Object.entries(LITE_ROUTES)) {
      const wire = wireRoutes[operationId as keyof typeof LITE_ROUTES];
      expect(route, operationId).toEqual({ method: wire.method, path: wire.path });
    }
  });

  it('writes, lists and reads the shared context in the runtime it names', async () => {
    const hub = createHubLite({ url: `${running.url}/`, token, timeoutMs: 30_000, runtime: 'web' });
    expect(hub.url).toBe(running.url);
    await hub.write([{ type: 'decision', title: 'Light client decision' }]);
    const items = await hub.list(0, 10);
    expect(items.map((item) => [item.title, item.source.runtime])).toEqual([
      ['Light client decision', 'openclaw'],
    ]);
    const { formatted } = await hub.shared(500);
    expect(formatted).toContain('Light client decision');
  });

  it('says why a call failed: the hub refused it, or could not be reached', async () => {
    const refused = createHubLite({
      url: running.url,
      token: 'cbx_not-a-token',
      timeoutMs: 30_000,
      runtime: 'web',
    });
    await expect(refused.list(0, 1)).rejects.toMatchObject({
      name: 'HubRequestError',
      status: 401,
    });
    const unreachable = createHubLite({
      url: 'http://127.0.0.1:1',
      token,
      timeoutMs: 30_000,
      runtime: 'web',
    });
    const error = await unreachable.shared(100).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(HubRequestError);
    expect((error as HubRequestError).status).toBeNull();
  });
});

describe('@ctxbus/client/outbox', () => {
  it('keeps what could not be sent and sends it once, in batches the hub accepts', async () => {
    const hub = createHubLite({ url: running.url, token, timeoutMs: 30_000, runtime: 'openclaw' });
    const items = Array.from({ length: 501 }, (_, index) => ({
      id: stableId('outbox-test', String(index)),
      type: 'status' as const,
      title: `Queued ${index}`,
    }));
    queueItems(stateDir, items);
    expect(pendingCount(stateDir)).toBe(501);
    const batches: number[] = [];
    const sent = await flushOutbox(stateDir, async (batch) => {
      batches.push(batch.length);
      await hub.write(batch);
    });
    expect(sent).toBe(501);
    expect(batches).toEqual([500, 1]);
    expect(pendingCount(stateDir)).toBe(0);
    // Sending the same ids again stores nothing new.
    queueItems(stateDir, items.slice(-2));
    await flushOutbox(stateDir, (batch) => hub.write(batch));
    const newest = await hub.list(0, 3);
    expect(newest.map((item) => item.title)).toEqual(['Queued 500', 'Queued 499', 'Queued 498']);
  });

  it('keeps a batch the hub did not take for the next flush', async () => {
    queueItems(stateDir, [{ type: 'status', title: 'Waits for the hub' }]);
    await expect(
      flushOutbox(stateDir, async () => {
        throw new HubRequestError('the hub is down', null);
      }),
    ).rejects.toThrow('the hub is down');
    expect(pendingCount(stateDir)).toBe(1);
    const received: string[] = [];
    expect(
      await flushOutbox(stateDir, async (batch) => {
        received.push(...batch.map((item) => item.title));
      }),
    ).toBe(1);
    expect(received).toEqual(['Waits for the hub']);
  });

  it('sets aside what the hub refuses for good, so the writes after it still go out', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ctxbus-outbox-refused-'));
    const hub = createHubLite({ url: running.url, token, timeoutMs: 30_000, runtime: 'web' });
    const id = (name: string) => stableId('outbox-refused-test', name);
    // Over the hub's 100,000 characters of content: a 400 that no retry changes.
    const tooBig = { id: id('big'), type: 'decision', title: 'Huge', content: 'x'.repeat(100_001) };
    queueItems(dir, [{ id: id('before'), type: 'status', title: 'Sent before the refused one' }]);
    queueItems(dir, [tooBig as never]);
    queueItems(dir, [{ id: id('after'), type: 'status', title: 'Sent after the refused one' }]);
    expect(await flushOutbox(dir, (batch) => hub.write(batch))).toBe(3);
    expect(pendingCount(dir)).toBe(0);
    const stored = (await hub.list(0, 500)).map((item) => item.id);
    expect(stored).toEqual(expect.arrayContaining([id('before'), id('after')]));
    expect(stored).not.toContain(id('big'));
    const kept = readFileSync(join(dir, REJECTED), 'utf8').trim().split('\n');
    expect(kept).toHaveLength(1);
    expect(JSON.parse(kept[0] as string)).toMatchObject({
      item: { id: id('big') },
      refused: { status: 400, message: expect.stringMatching(/100000/) },
    });
    // An unreachable hub or a refused token keeps the queue: those pass.
    queueItems(dir, [{ id: id('later'), type: 'status', title: 'Waits' }]);
    await expect(
      flushOutbox(dir, async () => {
        throw new HubRequestError('unauthorized: the token is unknown or revoked', 401);
      }),
    ).rejects.toThrow('unauthorized');
    expect(pendingCount(dir)).toBe(1);
    rmSync(dir, { recursive: true, force: true });
  });
});
