import type { Socket } from 'node:net';
import { connect } from 'node:net';
import { call, runCli, runtimeToken, waitUntil } from '@ctxbus/test-kit';
import { describe, expect, it } from 'vitest';
import { useInProcessHub } from './in-process-serve.ts';

// What a hub holds for answers its clients have not read: a list page ends at a size, and a
// token whose earlier answers sit unread in the hub is refused until it reads them.

const hub = useInProcessHub({});

describe('large answers', () => {
  /** Writes 54 items of 100,000 characters each for `token`'s team (5.4 M characters). */
  const writeLargeItems = async (token: string) => {
    const content = 'x'.repeat(100_000);
    for (let batch = 0; batch < 6; batch += 1) {
      const items = Array.from({ length: 9 }, (_, index) => ({
        type: 'discovery',
        title: `large ${batch * 9 + index}`,
        content,
      }));
      expect((await call(hub.url, 'POST', '/api/context', { token, body: items })).status).toBe(
        201,
      );
    }
  };

  it('ends a page of large items at about 4 Mi characters; nextBefore pages on to every item', async () => {
    const token = await runtimeToken(hub, 'large-pages', 'web');
    await writeLargeItems(token);
    const titles: string[] = [];
    let before: number | null = null;
    let pages = 0;
    do {
      const query: string = before === null ? '' : `&before=${before}`;
      const page = await call(hub.url, 'GET', `/api/context?limit=500${query}`, { token });
      expect(page.status).toBe(200);
      const items = page.body.items as { title: string; seq: number; content: string }[];
      // A page's item text stays within its budget (one item more would cross it).
      expect(items.reduce((sum, item) => sum + item.content.length, 0)).toBeLessThanOrEqual(
        4 * 1024 * 1024,
      );
      expect(items.length).toBeGreaterThan(0);
      titles.push(...items.map((item) => item.title));
      before = page.body.nextBefore as number | null;
      if (before !== null) expect(before).toBe(items.at(-1)?.seq);
      pages += 1;
    } while (before !== null);
    expect(pages).toBe(2);
    expect(new Set(titles).size).toBe(54);
    expect(titles).toHaveLength(54);
    // `ctxbus read --limit` pages on to its limit.
    const listed = await runCli(['read', '--limit', '50', '--json', '--url', hub.url], {
      env: { ...process.env, CTXBUS_TOKEN: token },
    });
    expect(listed.code, listed.stderr).toBe(0);
    const json = JSON.parse(listed.stdout) as { items: { title: string }[]; nextBefore: unknown };
    expect(json.items.map((item) => item.title)).toEqual(titles.slice(0, 50));
    expect(json.nextBefore).toEqual(expect.any(Number));
  });

  /** A client of `token` that asks for `path` and never reads the answer. */
  const askWithoutReading = (token: string, path: string) => {
    const target = new URL(hub.url);
    return new Promise<Socket>((resolve, reject) => {
      const socket = connect(Number(target.port), target.hostname, () => {
        socket.pause();
        socket.write(
          `GET ${path} HTTP/1.1\r\nHost: ${target.host}\r\nAuthorization: Bearer ${token}\r\n\r\n`,
          () => resolve(socket),
        );
      });
      socket.on('error', reject);
    });
  };

  // A list page a client leaves unread, and a live stream catching up that its reader does not
  // read (its batches wait in the socket's send queue), count alike.
  it.each([
    ['list pages', '/api/context?limit=500'],
    ['catching-up streams', '/api/stream?since=0'],
  ])(
    "refuses a token's requests with 429 while its unread %s hold over 16 MiB; other tokens are served",
    async (_what, path) => {
      const team = `unread-${path.includes('stream') ? 'streams' : 'pages'}`;
      const stuck = await runtimeToken(hub, team, 'web');
      const other = await runtimeToken(hub, team, 'telegram');
      await writeLargeItems(stuck);
      const unread: Socket[] = [];
      try {
        let refused: Awaited<ReturnType<typeof call>> | undefined;
        // Each unread answer is a few MB (54 items of 100,000 characters), part of it in the
        // kernel's socket buffers, the rest held by the hub: a few of them cross the budget.
        await waitUntil(async () => {
          if (unread.length >= 40) throw new Error('40 unread answers and no refusal');
          unread.push(await askWithoutReading(stuck, path));
          refused = await call(hub.url, 'GET', '/api/context?limit=1', { token: stuck });
          return refused.status === 429;
        }, 'the token whose answers go unread to be refused');
        expect(refused?.body.error).toMatchObject({
          code: 'limit_reached',
          message: expect.stringContaining('has not read'),
        });
        expect(refused?.headers.get('retry-after')).toBe('1');
        expect((await call(hub.url, 'GET', '/api/context?limit=1', { token: other })).status).toBe(
          200,
        );
      } finally {
        for (const socket of unread) socket.destroy();
      }
      await waitUntil(
        async () =>
          (await call(hub.url, 'GET', '/api/context?limit=1', { token: stuck })).status === 200,
        "the token to be served again once its unread answers' connections closed",
      );
    },
  );
});
