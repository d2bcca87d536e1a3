import { verifyWebhook } from '@ctxbus/client';
import { listenerName } from '@ctxbus/store/postgres';
import type { SseConnection, TestHub } from '@ctxbus/test-kit';
import {
  call,
  openStream,
  openWebSocketStream,
  runCli,
  runtimeToken,
  startHubProcess,
  startWebhookReceiver,
  waitUntil,
} from '@ctxbus/test-kit';
import { sql, storeUrl, withPostgres } from '@ctxbus/test-kit/postgres';
import { beforeAll, describe, expect, it } from 'vitest';
import { startInProcessServe, useInProcessHub } from './in-process-serve.ts';

// Several `ctxbus serve` hubs on one PostgreSQL schema (in the test's process; processes where
// one is killed or the CLI is the subject): each delivers the others' writes.

interface Written {
  id: string;
  seq: number;
  title: string;
}

async function write(hub: TestHub, token: string, title: string): Promise<Written> {
  const response = await call(hub.url, 'POST', '/api/context', {
    token,
    body: { type: 'status', title },
  });
  if (response.status !== 201) throw new Error(`write failed: ${JSON.stringify(response.body)}`);
  return response.body.items[0] as Written;
}

/** Every item seen exactly once, in strictly increasing sequence order. */
function expectOrderedOnce(stream: SseConnection, written: readonly Written[]): void {
  const seqs = stream.items().map((event) => event.seq);
  for (let i = 1; i < seqs.length; i += 1) expect(seqs[i]).toBeGreaterThan(seqs[i - 1] ?? 0);
  const ids = stream.items().map((event) => event.item.id as string);
  expect(new Set(ids).size).toBe(ids.length);
  expect(new Set(ids)).toEqual(new Set(written.map((item) => item.id)));
}

const seesAll = (stream: SseConnection, count: number) => () => stream.items().length >= count;

await withPostgres('hubs sharing PostgreSQL', (url, schemas) => {
  describe('two hubs on one schema', () => {
    const schema = schemas.next('hubs');
    // Sequential starts: the first mints the admin token, the second finds it. Tokens live in
    // the shared store: minted through one hub, valid on both.
    const a = useInProcessHub({
      store: storeUrl(url, schema),
      tokens: { onA: ['acme', 'claude-code'], onB: ['acme', 'openclaw'] },
    });
    const b = useInProcessHub({ store: storeUrl(url, schema) });

    beforeAll(() => {
      expect(a.adminToken).toEqual(expect.stringMatching(/^cbx_/));
      expect(b.adminToken).toBeNull();
    });

    it("delivers each hub's writes to SSE and WebSocket subscribers on the other", async () => {
      const sseOnB = openStream(b.url, a.tokens.onB);
      const wsOnA = openWebSocketStream(a.url, a.tokens.onA);
      await Promise.all([sseOnB.ready, wsOnA.ready]);
      const written = [
        await write(a, a.tokens.onA, 'written on a'),
        await write(b, a.tokens.onB, 'written on b'),
        await write(a, a.tokens.onA, 'a again'),
      ];
      await sseOnB.waitFor(seesAll(sseOnB, 3));
      await wsOnA.waitFor(seesAll(wsOnA, 3));
      // NUL cannot be stored in PostgreSQL text: refused up front, as on the embedded store.
      const nul = await call(a.url, 'POST', '/api/context', {
        token: a.tokens.onA,
        body: { type: 'status', title: 'bad \u0000 byte' },
      });
      expect(nul.status).toBe(400);
      expect(nul.body.error.message).toMatch(/NUL characters/);
      for (const stream of [sseOnB, wsOnA]) {
        expect(stream.items().map((event) => event.item.title)).toEqual([
          'written on a',
          'written on b',
          'a again',
        ]);
        expectOrderedOnce(stream, written);
        stream.close();
      }
    });

    it('with writers on both hubs at once, every subscriber sees every item once, in order', async () => {
      const streams = [
        openStream(a.url, a.tokens.onB),
        openStream(b.url, a.tokens.onA),
        openStream(b.url, a.tokens.onB),
      ];
      await Promise.all(streams.map((stream) => stream.ready));
      const writers = Array.from({ length: 8 }, (_, writer) =>
        (async () => {
          const hub = writer % 2 === 0 ? a : b;
          const token = writer % 2 === 0 ? a.tokens.onA : a.tokens.onB;
          const mine: Written[] = [];
          for (let n = 0; n < 25; n += 1) mine.push(await write(hub, token, `w${writer}-${n}`));
          return mine;
        })(),
      );
      const written = (await Promise.all(writers)).flat();
      expect(written).toHaveLength(200);
      // The store's sequence is gapless across both hubs.
      const seqs = written.map((item) => item.seq).sort((x, y) => x - y);
      expect((seqs.at(-1) ?? 0) - (seqs[0] ?? 0)).toBe(199);
      for (const stream of streams) {
        await stream.waitFor(seesAll(stream, 200));
        expectOrderedOnce(stream, written);
        stream.close();
      }
    });

    it('counts subscriptions per runtime across both hubs: 150 concurrent creates make 100', async () => {
      const racer = await runtimeToken(a, 'racing', 'web');
      const responses = await Promise.all(
        Array.from({ length: 150 }, (_, index) =>
          call((index % 2 === 0 ? a : b).url, 'POST', '/api/subscriptions', {
            token: racer,
            body: { delivery: 'pull' },
          }),
        ),
      );
      const statuses = responses.map((response) => response.status);
      expect(statuses.filter((status) => status === 201)).toHaveLength(100);
      expect(statuses.filter((status) => status === 400)).toHaveLength(50);
      const listed = await call(b.url, 'GET', '/api/subscriptions', { token: racer });
      expect(listed.body.subscriptions).toHaveLength(100);
    });

    it("keeps one unbroken audit chain per team from both hubs' concurrent task creates", async () => {
      const audited = await runtimeToken(a, 'audited', 'openclaw');
      const responses = await Promise.all(
        Array.from({ length: 60 }, (_, index) =>
          call((index % 2 === 0 ? a : b).url, 'POST', '/api/tasks', {
            token: audited,
            body: { title: `audited ${index}`, requiredCapabilities: ['search'] },
          }),
        ),
      );
      expect(responses.every((response) => response.status === 201)).toBe(true);
      // A routing decision and a first state per task, numbered 1..120 in one chain.
      const verified = await runCli(['audit', 'verify', '--url', b.url, '--token', audited]);
      expect(verified.stderr).toBe('');
      expect(verified.stdout).toMatch(
        /audit log of team audited: intact, 120 records, head [0-9a-f]{64}/,
      );
      await sql(
        url,
        `UPDATE "${schema}".audit_log SET actor = 'mallory' WHERE team_id = 'audited' AND seq = 77`,
      );
      const broken = await runCli(['audit', 'verify', '--url', a.url, '--token', audited]);
      expect(broken.code).toBe(1);
      expect(broken.stderr).toContain('audit log of team audited is broken at record 77');
      // The same answer straight from the database, no hub involved.
      const direct = await runCli([
        'audit',
        'verify',
        '--store',
        storeUrl(url, schema),
        '--team',
        'audited',
      ]);
      expect(direct.code).toBe(1);
      expect(direct.stderr).toContain('audit log of team audited is broken at record 77');
    });

    it('loses nothing when the LISTEN connections are killed while writes continue', async () => {
      // All writes go through b, so a learns of them only through PostgreSQL: notifications,
      // and after the kill, the catch-up on reconnection.
      const onHubA = openStream(a.url, a.tokens.onA);
      const onHubB = openStream(b.url, a.tokens.onA);
      await Promise.all([onHubA.ready, onHubB.ready]);
      const written: Written[] = [];
      let stop = false;
      const writers = Array.from({ length: 4 }, (_, writer) =>
        (async () => {
          for (let n = 0; !stop; n += 1)
            written.push(await write(b, a.tokens.onB, `k${writer}-${n}`));
        })(),
      );
      await waitUntil(() => written.length >= 40, '40 writes before the kill');
      const killed = await sql(
        url,
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1',
        [listenerName(schema)],
      );
      // One LISTEN connection per hub.
      expect(killed).toHaveLength(2);
      const atKill = written.length;
      await waitUntil(() => written.length >= atKill + 80, '80 writes after the kill');
      stop = true;
      await Promise.all(writers);
      for (const stream of [onHubA, onHubB]) {
        await stream.waitFor(seesAll(stream, written.length));
        expectOrderedOnce(stream, written);
      }
      // Both hubs listen again, and a's stream still gets b's new writes.
      await waitUntil(
        async () =>
          (
            await sql(url, 'SELECT pid FROM pg_stat_activity WHERE application_name = $1', [
              listenerName(schema),
            ])
          ).length === 2,
        'both hubs to LISTEN again',
      );
      const last = await write(b, a.tokens.onB, 'after reconnecting');
      await onHubA.waitFor(() => onHubA.items().some((event) => event.item.id === last.id));
      onHubA.close();
      onHubB.close();
    });
  });

  describe('push subscriptions on two hubs', () => {
    it('deliver every change once, in order, whichever hub it was written on', async () => {
      const schema = schemas.next('push');
      const args = ['--allow-private-webhooks', '--webhook-backoff-ms', '50'];
      const a = await startInProcessServe({ store: storeUrl(url, schema), args });
      const b = await startInProcessServe({ store: storeUrl(url, schema), args });
      const receiver = await startWebhookReceiver();
      try {
        const onA = await runtimeToken(a, 'acme', 'claude-code');
        const onB = await runtimeToken(a, 'acme', 'openclaw');
        const web = await runtimeToken(a, 'acme', 'web');
        const created = await call(b.url, 'POST', '/api/subscriptions', {
          token: web,
          body: { delivery: 'push', endpoint: receiver.url },
        });
        expect(created.status).toBe(201);
        const secret = created.body.secret as string;
        const writers = Array.from({ length: 6 }, (_, writer) =>
          (async () => {
            const mine: Written[] = [];
            for (let n = 0; n < 10; n += 1) {
              mine.push(await write(writer % 2 ? a : b, writer % 2 ? onA : onB, `p${writer}-${n}`));
            }
            return mine;
          })(),
        );
        const written = (await Promise.all(writers)).flat();
        await receiver.waitFor((received) => received.length >= written.length);
        const seqs = [];
        for (const hook of receiver.received) {
          const headers = hook.headers as Record<string, string>;
          seqs.push((await verifyWebhook({ secret, headers, body: hook.body })).seq);
        }
        // One hub at a time holds the subscription: no repeats, sequence order.
        expect(seqs).toEqual(written.map((item) => item.seq).sort((x, y) => x - y));
        // A hub that stops hands the subscription over at once.
        expect(await a.stop()).toBe(0);
        const late = await write(b, onB, 'after a stopped');
        await receiver.waitFor((received) => received.length > written.length);
        const last = receiver.received.at(-1);
        const payload = await verifyWebhook({
          secret,
          headers: last?.headers as Record<string, string>,
          body: last?.body ?? '',
        });
        expect(payload.seq).toBe(late.seq);
      } finally {
        await a.stop();
        expect(await b.stop()).toBe(0);
        await receiver.close();
      }
    });
  });

  describe('a hub killed mid-load', () => {
    it('keeps every acknowledged write, and the surviving hub streams all of them', async () => {
      const schema = schemas.next('crash');
      const victim = await startHubProcess({ store: storeUrl(url, schema) });
      const survivor = await startHubProcess({ store: storeUrl(url, schema) });
      try {
        const token = await runtimeToken(victim, 'acme', 'claude-code');
        const watcher = await runtimeToken(victim, 'acme', 'web');
        const stream = openStream(survivor.url, watcher);
        await stream.ready;
        const acknowledged: Written[] = [];
        let failures = 0;
        const writers = Array.from({ length: 8 }, (_, writer) =>
          (async () => {
            for (let n = 0; ; n += 1) {
              try {
                acknowledged.push(await write(victim, token, `c${writer}-${n}`));
              } catch {
                failures += 1;
                return;
              }
            }
          })(),
        );
        await waitUntil(
          () => acknowledged.length >= 100,
          '100 acknowledged writes before the kill',
          {
            intervalMs: 5,
          },
        );
        await victim.kill();
        await Promise.all(writers);
        expect(failures).toBe(8);
        // Every acknowledged write is in the store, and streamed in order by the other hub
        // (writes committed but not acknowledged before the kill may be there too).
        const latest = Math.max(...acknowledged.map((item) => item.seq));
        await stream.waitFor(() => stream.items().some((event) => event.seq >= latest));
        const streamed = new Set(stream.items().map((event) => event.item.id as string));
        for (const item of acknowledged) expect(streamed.has(item.id)).toBe(true);
        const seqs = stream.items().map((event) => event.seq);
        expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => (seqs[0] ?? 0) + i));
        for (const item of acknowledged.slice(0, 5)) {
          const got = await call(survivor.url, 'GET', `/api/context/${item.id}`, { token });
          expect(got.status).toBe(200);
          expect(got.body.item.title).toBe(item.title);
        }
        // A restarted hub serves the same store, and its writes reach the survivor's stream.
        const restarted = await startHubProcess({ store: storeUrl(url, schema) });
        const after = await write(restarted, token, 'after the crash');
        await stream.waitFor(() => stream.items().some((event) => event.item.id === after.id));
        // Replaying everything: sequences 1..N exactly once, no item written twice.
        const replay = openStream(restarted.url, token, { query: 'since=0' });
        await replay.waitFor(() => replay.items().at(-1)?.seq === after.seq);
        replay.close();
        expect(replay.items().map((event) => event.seq)).toEqual(
          Array.from({ length: after.seq }, (_, index) => index + 1),
        );
        const titles = replay.items().map((event) => event.item.title as string);
        expect(new Set(titles).size).toBe(titles.length);
        stream.close();
        expect(await restarted.stop()).toBe(0);
      } finally {
        await victim.kill();
        expect(await survivor.stop()).toBe(0);
      }
    });
  });

  describe('the CLI on PostgreSQL', () => {
    it('migrates, mints tokens directly on the store, and refuses an old schema with --no-migrate', async () => {
      const schema = schemas.next('cli');
      const store = storeUrl(url, schema);
      const fresh = await runCli(['serve', '--store', store, '--no-migrate', '--port', '0']);
      expect(fresh.code).toBe(6);
      expect(fresh.stderr).toMatch(/ctxbus migrate/);

      const migrated = await runCli(['migrate', '--store', store, '--json']);
      expect(migrated.code, migrated.stderr).toBe(0);
      const result = JSON.parse(migrated.stdout);
      expect(result).toMatchObject({ schema, from: 0 });
      expect(result.to).toBeGreaterThan(0);
      expect(result.applied).toHaveLength(result.to);
      // The location never carries a password.
      expect(result.location).not.toMatch(/:[^/@]*@/);
      const again = await runCli(['migrate', '--store', store]);
      expect(again.code).toBe(0);
      expect(again.stdout).toMatch(/nothing to do/);
      // How vector search will compare vectors, and why when it is not pgvector.
      expect(again.stdout).toMatch(/^vector search: (pgvector|exact scan \(.+\))$/m);
      expect(['pgvector', 'exact']).toContain(result.vectors.vectorIndex);

      // Tokens straight on the store, as an operator would before any hub runs.
      const admin = await runCli(['token', 'create', '--admin', '--store', store]);
      expect(admin.code, admin.stderr).toBe(0);
      const minted = await runCli([
        'token',
        'create',
        '--store',
        store,
        '--team',
        'acme',
        '--runtime',
        'claude-code',
      ]);
      expect(minted.code, minted.stderr).toBe(0);
      const hub = await startHubProcess({ store, args: ['--no-migrate'] });
      try {
        // An admin token exists already: none is minted or printed.
        expect(hub.adminToken).toBeNull();
        const runtime = minted.stdout.trim();
        const written = await write(hub, runtime, 'via a CLI-minted token');
        expect(written.seq).toBe(1);
        const listed = await runCli(['token', 'list', '--store', store, '--json']);
        expect(JSON.parse(listed.stdout).tokens).toHaveLength(2);
        // $CTXBUS_STORE works as --store does.
        const viaEnv = await runCli(['token', 'list', '--json'], { env: { CTXBUS_STORE: store } });
        expect(JSON.parse(viaEnv.stdout).tokens).toHaveLength(2);
        // A hub this CLI knows of does not win over $CTXBUS_STORE (deploy.md's sequence).
        const beside = { CTXBUS_STORE: store, CTXBUS_URL: hub.url };
        const another = await runCli(['token', 'create', '--admin'], { env: beside });
        expect(another.code, another.stderr).toBe(0);
        const after = await runCli(['token', 'list', '--json'], { env: beside });
        expect(JSON.parse(after.stdout).tokens).toHaveLength(3);
      } finally {
        expect(await hub.stop()).toBe(0);
      }
      // Eight CLI processes and a hub, each about a second of Node start-up alone: 13 s on an
      // idle 2-core machine, over 30 s while the other test files run beside it.
    });

    it('says what is wrong with a bad --store', async () => {
      const notPostgres = await runCli(['serve', '--store', 'mysql://localhost/db']);
      expect(notPostgres.code).toBe(2);
      expect(notPostgres.stderr).toMatch(/--store must be a postgres:\/\/ URL/);
      const both = await runCli(['migrate', '--store', url, '--data', '/tmp/x']);
      expect(both.code).toBe(2);
      expect(both.stderr).toMatch(/not both/);
      const badSchema = await runCli(['migrate', '--store', storeUrl(url, 'Bad-Name')]);
      expect(badSchema.code).toBe(2);
      expect(badSchema.stderr).toMatch(/not a plain PostgreSQL name/);
      const unreachable = await runCli([
        'migrate',
        '--store',
        'postgres://nobody@127.0.0.1:1/none',
      ]);
      expect(unreachable.code).not.toBe(0);
      expect(unreachable.stderr.trim().split('\n')).toHaveLength(1);
    });
  });
});
