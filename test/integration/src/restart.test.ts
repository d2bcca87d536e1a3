import {
  call,
  openStream,
  removeDir,
  runtimeToken,
  startHubProcess,
  tempDir,
  waitUntil,
} from '@ctxbus/test-kit';
import { afterAll, describe, expect, it } from 'vitest';

const dataDir = tempDir();
let adminToken: string | null = null;
afterAll(() => removeDir(dataDir));

describe('restarts', () => {
  it('keeps items, tokens and the sequence across a clean restart, printing no new admin token', async () => {
    const first = await startHubProcess({ dataDir });
    adminToken = first.adminToken;
    const token = await runtimeToken(first, 'acme', 'web');
    const written = await call(first.url, 'POST', '/api/context', {
      token,
      body: { type: 'decision', title: 'persist me' },
    });
    expect(await first.stop()).toBe(0);

    const second = await startHubProcess({ dataDir });
    expect(second.adminToken).toBeNull();
    const read = await call(second.url, 'GET', `/api/context/${written.body.items[0].id}`, {
      token,
    });
    expect(read.body.item.title).toBe('persist me');
    const next = await call(second.url, 'POST', '/api/context', {
      token,
      body: { type: 'status', title: 'after' },
    });
    expect(next.body.items[0].seq).toBe(written.body.items[0].seq + 1);
    expect(await second.stop()).toBe(0);
  });

  it('loses no acknowledged write when the hub is killed -9 mid-load', async () => {
    const hub = { ...(await startHubProcess({ dataDir })) };
    hub.adminToken = adminToken;
    const token = await runtimeToken(hub, 'acme', 'claude-code');
    const acknowledged: string[] = [];
    let stop = false;
    const writers = Array.from({ length: 4 }, async (_, writer) => {
      for (let index = 0; !stop; index++) {
        try {
          const response = await call(hub.url, 'POST', '/api/context', {
            token,
            body: { type: 'status', title: `w${writer}-${index}` },
          });
          if (response.status === 201) acknowledged.push(response.body.items[0].id);
        } catch {
          return;
        }
      }
    });
    // Mid-load: the writers keep going while the hub is killed.
    await waitUntil(() => acknowledged.length >= 50, '50 acknowledged writes before the kill');
    await hub.kill();
    stop = true;
    await Promise.all(writers);
    expect(acknowledged.length).toBeGreaterThan(20);

    const again = await startHubProcess({ dataDir });
    const seen = new Set<string>();
    let before: number | undefined;
    for (;;) {
      const page = await call(
        again.url,
        'GET',
        `/api/context?limit=500${before ? `&before=${before}` : ''}`,
        { token },
      );
      for (const item of page.body.items) seen.add(item.id);
      if (!page.body.nextBefore) break;
      before = page.body.nextBefore;
    }
    const missing = acknowledged.filter((id) => !seen.has(id));
    expect(missing).toEqual([]);
    // Gapless: replaying the stream from 0 yields every sequence 1..N exactly once.
    const latest = (await call(again.url, 'GET', '/health', { token })).body.seq as number;
    const replay = openStream(again.url, token, { query: 'since=0' });
    await replay.waitFor(() => replay.items().at(-1)?.seq === latest);
    replay.close();
    const seqs = replay.items().map((event) => event.seq);
    expect(seqs).toEqual(Array.from({ length: latest }, (_, index) => index + 1));
    expect(new Set(replay.items().map((event) => event.item.id)).size).toBe(seen.size);
    expect(await again.stop()).toBe(0);
  });
});
