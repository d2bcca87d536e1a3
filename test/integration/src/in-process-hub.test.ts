import { existsSync } from 'node:fs';
import { mintToken, startHub } from '@ctxbus/hub';
import { call } from '@ctxbus/test-kit';
import type { InProcessHub } from '@ctxbus/test-kit/in-process-hub';
import { startInProcessHub } from '@ctxbus/test-kit/in-process-hub';
import { withPostgres } from '@ctxbus/test-kit/postgres';
import { describe, expect, it } from 'vitest';

// The test kit's in-process hub, which the packages below the CLI test against: its tokens
// work over HTTP, a restart keeps the port and the data, and close leaves nothing behind.

async function writeAndRead(hub: InProcessHub<'code' | 'other'>) {
  const written = await call(hub.url, 'POST', '/api/context', {
    token: hub.tokens.code,
    body: { type: 'decision', title: 'Keep one fixture' },
  });
  expect(written.status).toBe(201);
  const id: string = written.body.items[0].id;
  const own = await call(hub.url, 'GET', `/api/context/${id}`, { token: hub.tokens.code });
  expect(own.body.item.title).toBe('Keep one fixture');
  // The other team's token is real too, and sees nothing of acme's.
  const other = await call(hub.url, 'GET', `/api/context/${id}`, { token: hub.tokens.other });
  expect(other.status).toBe(404);
  return id;
}

const tokens = { code: ['acme', 'claude-code'], other: ['globex', 'claude-code'] } as const;

describe('startInProcessHub on a temporary SQLite file', () => {
  it('serves its minted tokens on loopback, keeps data across a restart, removes its file', async () => {
    const hub = await startInProcessHub({ startHub, mintToken }, { tokens });
    const url = hub.url;
    const dataDir = hub.dataDir;
    try {
      expect(new URL(url).hostname).toBe('127.0.0.1');
      const id = await writeAndRead(hub);
      const extra = await hub.mint('openclaw');
      expect(extra.tokenId).toEqual(expect.any(String));

      let calledWhileDown = false;
      await hub.restart(async () => {
        calledWhileDown = (await fetch(url).catch(() => null)) === null;
      });
      expect(calledWhileDown).toBe(true);
      expect(hub.url).toBe(url);
      const again = await call(url, 'GET', `/api/context/${id}`, { token: extra.token });
      expect(again.body.item.title).toBe('Keep one fixture');
    } finally {
      await hub.close();
    }
    expect(dataDir && existsSync(dataDir)).toBe(false);
  });
});

await withPostgres('startInProcessHub on PostgreSQL', (url, schemas) => {
  describe('startInProcessHub on a given PostgreSQL URL', () => {
    it('serves its minted tokens and keeps data across a restart', async () => {
      const hub = await startInProcessHub(
        { startHub, mintToken },
        { tokens, postgres: { url, schema: schemas.next('in_process') } },
      );
      try {
        const id = await writeAndRead(hub);
        await hub.restart();
        const again = await call(hub.url, 'GET', `/api/context/${id}`, { token: hub.tokens.code });
        expect(again.body.item.title).toBe('Keep one fixture');
      } finally {
        await hub.close();
      }
    });
  });
});
