import { verifyWebhook } from '@ctxbus/client';
import type { ReceivedWebhook, TestHub, WebhookReceiver } from '@ctxbus/test-kit';
import {
  call,
  removeDir,
  runtimeToken,
  startHubProcess,
  startWebhookReceiver,
  tempDir,
} from '@ctxbus/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInProcessServe, useInProcessHub } from './in-process-serve.ts';

// Push and pull subscriptions against a real hub and a real webhook receiver on loopback (so
// the hub runs with --allow-private-webhooks, except where the guard is tested); hub processes
// where they restart or are killed with -9.

const FAST = ['--allow-private-webhooks', '--webhook-attempts', '3', '--webhook-backoff-ms', '40'];

const hub = useInProcessHub({
  args: FAST,
  tokens: { web: ['acme', 'web'], code: ['acme', 'claude-code'], rival: ['globex', 'web'] },
});

async function write(body: unknown, token = hub.tokens.code, target: TestHub = hub) {
  const response = await call(target.url, 'POST', '/api/context', { token, body });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body.items[0] as { id: string; seq: number; title: string };
}

async function subscribe(body: unknown, token = hub.tokens.web, target: TestHub = hub) {
  const response = await call(target.url, 'POST', '/api/subscriptions', { token, body });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body as { subscription: { id: string; cursor: number }; secret: string | null };
}

/** Verified payloads of the successful deliveries, in arrival order. */
async function delivered(received: readonly ReceivedWebhook[], secret: string) {
  const payloads = [];
  for (const hook of received.filter((entry) => entry.status < 300)) {
    payloads.push(
      await verifyWebhook({
        secret,
        headers: hook.headers as Record<string, string>,
        body: hook.body,
      }),
    );
  }
  return payloads;
}

describe('push subscriptions', () => {
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    receiver = await startWebhookReceiver();
  });
  afterAll(() => receiver.close());

  it('POSTs each matching change in order, signed, with a stable idempotency key', async () => {
    const { subscription, secret } = await subscribe({
      delivery: 'push',
      endpoint: receiver.url,
      filter: { tags: ['ops'], minUrgency: 'attention' },
      label: 'pager',
    });
    expect(secret).toMatch(/^whsec_/);
    expect(subscription).toMatchObject({ delivery: 'push', runtime: 'web', delivered: 0 });
    await write({ type: 'status', title: 'not ops', urgency: 'blocking' });
    const first = await write({
      type: 'alert',
      title: 'disk full',
      relevanceTags: ['ops'],
      urgency: 'blocking',
    });
    await write({ type: 'status', title: 'ops but background', relevanceTags: ['ops'] });
    const second = await write({
      type: 'request',
      title: 'restart db',
      relevanceTags: ['ops'],
      urgency: 'attention',
    });
    await receiver.waitFor((received) => received.length >= 2);
    const payloads = await delivered(receiver.received, secret ?? '');
    expect(payloads.map((payload) => payload.item.title)).toEqual(['disk full', 'restart db']);
    expect(payloads.map((payload) => payload.seq)).toEqual([first.seq, second.seq]);
    expect(payloads[0]).toMatchObject({ subscriptionId: subscription.id, event: 'context-added' });
    const hook = receiver.received[0];
    expect(hook?.headers['webhook-id']).toBe(`${subscription.id}.${first.seq}`);
    expect(hook?.headers['idempotency-key']).toBe(hook?.headers['webhook-id']);
    expect(hook?.headers['user-agent']).toMatch(/^ctxbus\//);
    // A tampered body, a wrong secret or an old timestamp fails verification.
    const headers = hook?.headers as Record<string, string>;
    await expect(
      verifyWebhook({
        secret: secret ?? '',
        headers,
        body: hook?.body.replace('disk', 'DISK') ?? '',
      }),
    ).rejects.toThrow(/no signature matches/);
    await expect(
      verifyWebhook({
        secret: 'whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=',
        headers,
        body: hook?.body ?? '',
      }),
    ).rejects.toThrow(/no signature matches/);
    await expect(
      verifyWebhook({
        secret: secret ?? '',
        headers,
        body: hook?.body ?? '',
        now: new Date(Date.now() + 600_000),
      }),
    ).rejects.toThrow(/more than 300 s/);
    // The API shows progress, never the secret.
    const shown = await call(hub.url, 'GET', `/api/subscriptions/${subscription.id}`, {
      token: hub.tokens.web,
    });
    expect(shown.body.subscription).toMatchObject({
      delivered: 2,
      cursor: second.seq,
      retry: null,
    });
    expect(JSON.stringify(shown.body)).not.toContain(secret ?? 'never');
    await call(hub.url, 'DELETE', `/api/subscriptions/${subscription.id}`, {
      token: hub.tokens.web,
    });
    receiver.received.length = 0;
  });

  it("delivers another team's change at once beside more of one team's subscriptions than delivery slots (16), none of them due", async () => {
    const idle = [];
    for (let index = 0; index < 20; index++) {
      idle.push(
        await subscribe({ delivery: 'push', endpoint: receiver.url, label: `idle ${index}` }),
      );
    }
    const theirs = await subscribe(
      { delivery: 'push', endpoint: receiver.url, label: 'globex' },
      hub.tokens.rival,
    );
    // globex's writes move the sequence past acme's cursors: acme's subscriptions look due,
    // find nothing of their team, and must neither hold the slots nor look due again.
    for (let index = 0; index < 3; index++) {
      const item = await write({ type: 'status', title: `globex ${index}` }, hub.tokens.rival);
      await receiver.waitFor((received) =>
        received.some((hook) => hook.body.includes(`"seq":${item.seq},`)),
      );
    }
    const payloads = await delivered(receiver.received, theirs.secret ?? '');
    expect(payloads.map((payload) => payload.item.title)).toEqual([
      'globex 0',
      'globex 1',
      'globex 2',
    ]);
    for (const { subscription } of [...idle, theirs]) {
      const token = subscription === theirs.subscription ? hub.tokens.rival : hub.tokens.web;
      await call(hub.url, 'DELETE', `/api/subscriptions/${subscription.id}`, { token });
    }
    receiver.received.length = 0;
  });

  it('retries a failing delivery with backoff, keeping order, with the same webhook-id', async () => {
    const { subscription, secret } = await subscribe({
      delivery: 'push',
      endpoint: receiver.url,
      filter: { tags: ['retry'] },
    });
    let failures = 0;
    receiver.respond = () => (failures++ < 2 ? 503 : 204);
    const one = await write({ type: 'status', title: 'r1', relevanceTags: ['retry'] });
    const two = await write({ type: 'status', title: 'r2', relevanceTags: ['retry'] });
    await receiver.waitFor(
      (received) => received.filter((hook) => hook.status === 204).length >= 2,
    );
    const ids = receiver.received.map(
      (hook) => `${hook.headers['webhook-id']}#${hook.headers['ctxbus-attempt']}:${hook.status}`,
    );
    expect(ids).toEqual([
      `${subscription.id}.${one.seq}#1:503`,
      `${subscription.id}.${one.seq}#2:503`,
      `${subscription.id}.${one.seq}#3:204`,
      `${subscription.id}.${two.seq}#1:204`,
    ]);
    expect((await delivered(receiver.received, secret ?? '')).map((p) => p.item.title)).toEqual([
      'r1',
      'r2',
    ]);
    const shown = await call(hub.url, 'GET', `/api/subscriptions/${subscription.id}`, {
      token: hub.tokens.web,
    });
    expect(shown.body.subscription).toMatchObject({ delivered: 2, deadLettered: 0, retry: null });
    await call(hub.url, 'DELETE', `/api/subscriptions/${subscription.id}`, {
      token: hub.tokens.web,
    });
    receiver.respond = () => 204;
    receiver.received.length = 0;
  });

  it('dead-letters a change after the last attempt, shows it, and moves on', async () => {
    const { subscription } = await subscribe({
      delivery: 'push',
      endpoint: receiver.url,
      filter: { tags: ['dead'] },
    });
    receiver.respond = ({ body }) => (body.includes('poison') ? 500 : 204);
    const poison = await write({ type: 'status', title: 'poison', relevanceTags: ['dead'] });
    const fine = await write({ type: 'status', title: 'fine', relevanceTags: ['dead'] });
    await receiver.waitFor((received) => received.some((hook) => hook.status === 204));
    expect(receiver.received.map((hook) => hook.status)).toEqual([500, 500, 500, 204]);
    const letters = await call(
      hub.url,
      'GET',
      `/api/subscriptions/${subscription.id}/dead-letters`,
      { token: hub.tokens.web },
    );
    expect(letters.status).toBe(200);
    expect(letters.body.deadLetters).toEqual([
      expect.objectContaining({
        seq: poison.seq,
        itemId: poison.id,
        attempts: 3,
        lastError: 'HTTP 500',
        event: 'context-added',
      }),
    ]);
    const shown = await call(hub.url, 'GET', `/api/subscriptions/${subscription.id}`, {
      token: hub.tokens.web,
    });
    expect(shown.body.subscription).toMatchObject({
      delivered: 1,
      deadLettered: 1,
      cursor: fine.seq,
    });
    await call(hub.url, 'DELETE', `/api/subscriptions/${subscription.id}`, {
      token: hub.tokens.web,
    });
    receiver.respond = () => 204;
    receiver.received.length = 0;
  });

  it('belongs to its runtime: other runtimes and teams cannot see or touch it', async () => {
    const { subscription } = await subscribe({ delivery: 'push', endpoint: receiver.url });
    for (const token of [hub.tokens.code, hub.tokens.rival]) {
      expect(
        (await call(hub.url, 'GET', `/api/subscriptions/${subscription.id}`, { token })).status,
      ).toBe(404);
      expect(
        (await call(hub.url, 'DELETE', `/api/subscriptions/${subscription.id}`, { token })).status,
      ).toBe(404);
      const listed = await call(hub.url, 'GET', '/api/subscriptions', { token });
      expect(listed.body.subscriptions.map((s: { id: string }) => s.id)).not.toContain(
        subscription.id,
      );
    }
    const mine = await call(hub.url, 'GET', '/api/subscriptions', { token: hub.tokens.web });
    expect(mine.body.subscriptions.map((s: { id: string }) => s.id)).toContain(subscription.id);
    const forOther = await call(hub.url, 'POST', '/api/subscriptions', {
      token: hub.tokens.web,
      body: { delivery: 'pull', runtime: 'claude-code' },
    });
    expect(forOther.status).toBe(403);
    const deleted = await call(hub.url, 'DELETE', `/api/subscriptions/${subscription.id}`, {
      token: hub.tokens.web,
    });
    expect(deleted.body).toEqual({ deleted: true });
    expect(
      (
        await call(hub.url, 'GET', `/api/subscriptions/${subscription.id}`, {
          token: hub.tokens.web,
        })
      ).status,
    ).toBe(404);
  });

  it('ends a push subscription with the token that created it: nothing is delivered after the revocation', async () => {
    const minted = await call(hub.url, 'POST', '/api/admin/tokens', {
      token: hub.adminToken,
      body: { teamId: 'acme', runtime: 'openclaw', label: 'leaked' },
    });
    expect(minted.status).toBe(201);
    const leaked = await subscribe(
      { delivery: 'push', endpoint: receiver.url, filter: { tags: ['after-revoke'] } },
      minted.body.token,
    );
    const control = await subscribe({
      delivery: 'push',
      endpoint: receiver.url,
      filter: { tags: ['after-revoke'] },
    });
    const revoked = await call(hub.url, 'DELETE', `/api/admin/tokens/${minted.body.info.id}`, {
      token: hub.adminToken,
    });
    expect(revoked.status).toBe(200);
    receiver.received.length = 0;
    await write({ type: 'alert', title: 'after the revocation', relevanceTags: ['after-revoke'] });
    // The control subscription's delivery shows the dispatcher went past the change.
    await receiver.waitFor((received) =>
      received.some((hook) => hook.body.includes(control.subscription.id)),
    );
    expect(receiver.received.some((hook) => hook.body.includes(leaked.subscription.id))).toBe(
      false,
    );
    // Gone at once (the revocation removed it), not only silent: the runtime's other token
    // lists none.
    const other = await call(hub.url, 'POST', '/api/admin/tokens', {
      token: hub.adminToken,
      body: { teamId: 'acme', runtime: 'openclaw', label: 'kept' },
    });
    const listed = await call(hub.url, 'GET', '/api/subscriptions', { token: other.body.token });
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    expect((listed.body.subscriptions as { id: string }[]).map((each) => each.id)).not.toContain(
      leaked.subscription.id,
    );
    expect(
      (
        await call(hub.url, 'DELETE', `/api/subscriptions/${control.subscription.id}`, {
          token: hub.tokens.web,
        })
      ).status,
    ).toBe(200);
  });
});

describe('pull subscriptions', () => {
  it("take seed 000's ContextSubscription body as written, mapped to the hub's form", async () => {
    const { subscription } = await subscribe({
      runtimeId: 'web-tab-1',
      runtimeType: 'web',
      scopes: ['global'],
      relevanceTags: ['database'],
      minUrgency: 'attention',
      deliveryMode: 'pull',
    });
    expect(subscription).toMatchObject({
      runtime: 'web',
      delivery: 'pull',
      label: 'web-tab-1',
      filter: { scopes: ['global'], tags: ['database'], minUrgency: 'attention' },
    });
    const base = `/api/subscriptions/${subscription.id}`;
    await write({
      type: 'alert',
      title: 'db down',
      urgency: 'attention',
      relevanceTags: ['database'],
    });
    await write({ type: 'alert', title: 'quiet', relevanceTags: ['database'] });
    await write({ type: 'alert', title: 'other tag', urgency: 'blocking', relevanceTags: ['ci'] });
    const pending = await call(hub.url, 'GET', `${base}/pending`, { token: hub.tokens.web });
    expect(
      pending.body.changes.map((change: { item: { title: string } }) => change.item.title),
    ).toEqual(['db down']);
    // Another runtime's type is refused, as `runtime` is; a wrong field says which.
    const other = await call(hub.url, 'POST', '/api/subscriptions', {
      token: hub.tokens.web,
      body: { runtimeId: 'x', runtimeType: 'openclaw', deliveryMode: 'pull' },
    });
    expect(other.status).toBe(403);
    const bad = await call(hub.url, 'POST', '/api/subscriptions', {
      token: hub.tokens.web,
      body: { runtimeId: 'x', runtimeType: 'web', deliveryMode: 'push' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/endpoint: push needs an endpoint/);
    // A body that fits neither form is told what each field needs, one line a field.
    for (const [body, message] of [
      [
        {},
        /^body: delivery: Invalid option: expected one of "push"\|"pull" \(or seed 000's ContextSubscription: runtimeId, runtimeType, deliveryMode\)$/,
      ],
      [{ scopes: ['global'] }, /^body: runtimeId: .*; runtimeType: .* \(read as seed 000's/],
      [
        { deliveryMode: 'pull', scopes: 'global' },
        /^body: runtimeId: [^;]*; runtimeType: [^;]*; scopes: [^;]*expected array[^;]* \(read as/,
      ],
    ] as const) {
      const refused = await call(hub.url, 'POST', '/api/subscriptions', {
        token: hub.tokens.web,
        body,
      });
      expect(refused.status).toBe(400);
      expect(refused.body.error.message, JSON.stringify(body)).toMatch(message);
    }
    // deliveryMode left out takes the seed's default (delivery_mode DEFAULT 'pull').
    const defaulted = await call(hub.url, 'POST', '/api/subscriptions', {
      token: hub.tokens.web,
      body: { runtimeId: 'web-tab-2', runtimeType: 'web', relevanceTags: ['ci'] },
    });
    expect(defaulted.status, JSON.stringify(defaulted.body)).toBe(201);
    expect(defaulted.body.subscription).toMatchObject({ delivery: 'pull', label: 'web-tab-2' });
    await call(hub.url, 'DELETE', `/api/subscriptions/${defaulted.body.subscription.id}`, {
      token: hub.tokens.web,
    });
    await call(hub.url, 'DELETE', base, { token: hub.tokens.web });
  });

  it('return what the runtime has not seen yet, until it acknowledges', async () => {
    const { subscription, secret } = await subscribe({
      delivery: 'pull',
      filter: { types: ['decision'] },
    });
    expect(secret).toBeNull();
    const base = `/api/subscriptions/${subscription.id}`;
    expect((await call(hub.url, 'GET', `${base}/pending`, { token: hub.tokens.web })).body).toEqual(
      {
        changes: [],
        next: subscription.cursor,
        more: false,
      },
    );
    const one = await write({ type: 'decision', title: 'd1' });
    await write({ type: 'status', title: 'not a decision' });
    // Private to claude-code: never shown to web's subscription.
    await write({ type: 'decision', title: 'private', visibility: 'private' });
    const two = await write({ type: 'decision', title: 'd2' }, hub.tokens.web);
    // Another runtime's private change after the last one web sees does not move `next`.
    const hidden = await write({ type: 'decision', title: 'later', visibility: 'private' });
    const pending = await call(hub.url, 'GET', `${base}/pending`, { token: hub.tokens.web });
    expect(
      pending.body.changes.map((change: { item: { title: string } }) => change.item.title),
    ).toEqual(['d1', 'd2']);
    expect(pending.body.next).toBe(two.seq);
    expect(hidden.seq).toBeGreaterThan(two.seq);
    // Reading again returns the same; a limit pages.
    expect((await call(hub.url, 'GET', `${base}/pending`, { token: hub.tokens.web })).body).toEqual(
      pending.body,
    );
    const page = await call(hub.url, 'GET', `${base}/pending?limit=1`, { token: hub.tokens.web });
    expect(page.body.changes.map((change: { seq: number }) => change.seq)).toEqual([one.seq]);
    expect(page.body.more).toBe(true);
    // `next` covers what was read: d1 and the non-matching changes after it, not d2.
    expect(page.body.next).toBeGreaterThanOrEqual(one.seq);
    expect(page.body.next).toBeLessThan(two.seq);
    const acked = await call(hub.url, 'POST', `${base}/ack`, {
      token: hub.tokens.web,
      body: { seq: page.body.next },
    });
    expect(acked.body.subscription.cursor).toBe(page.body.next);
    const rest = await call(hub.url, 'GET', `${base}/pending`, { token: hub.tokens.web });
    expect(rest.body.changes.map((change: { seq: number }) => change.seq)).toEqual([two.seq]);
    await call(hub.url, 'POST', `${base}/ack`, {
      token: hub.tokens.web,
      body: { seq: rest.body.next },
    });
    // Never backwards, never beyond the newest change.
    const back = await call(hub.url, 'POST', `${base}/ack`, {
      token: hub.tokens.web,
      body: { seq: 1 },
    });
    expect(back.body.subscription.cursor).toBe(two.seq);
    const beyond = await call(hub.url, 'POST', `${base}/ack`, {
      token: hub.tokens.web,
      body: { seq: two.seq + 1000 },
    });
    expect(beyond.status).toBe(400);
    expect(beyond.body.error.message).toMatch(/beyond the newest change/);
    expect(
      (await call(hub.url, 'GET', `${base}/pending`, { token: hub.tokens.web })).body.changes,
    ).toEqual([]);
  });

  it('replays from `since`, and pending/ack refuse push subscriptions', async () => {
    const { subscription } = await subscribe({
      delivery: 'pull',
      since: 0,
      filter: { types: ['decision'] },
    });
    const pending = await call(hub.url, 'GET', `/api/subscriptions/${subscription.id}/pending`, {
      token: hub.tokens.web,
    });
    expect(pending.body.changes.length).toBeGreaterThanOrEqual(2);
    expect(pending.body.changes[0].seq).toBeLessThan(pending.body.changes[1].seq);
    const receiver = await startWebhookReceiver();
    const push = await subscribe({ delivery: 'push', endpoint: receiver.url });
    const refused = await call(
      hub.url,
      'GET',
      `/api/subscriptions/${push.subscription.id}/pending`,
      { token: hub.tokens.web },
    );
    expect(refused.status).toBe(409);
    await call(hub.url, 'DELETE', `/api/subscriptions/${push.subscription.id}`, {
      token: hub.tokens.web,
    });
    await receiver.close();
  });
});

describe('bad subscriptions', () => {
  it('are refused with a code and a reason', async () => {
    const cases: [unknown, number, RegExp][] = [
      [{ delivery: 'push' }, 400, /push needs an endpoint/],
      [{ delivery: 'pull', endpoint: 'https://example.com/x' }, 400, /no endpoint/],
      [{ delivery: 'push', endpoint: 'ftp://example.com/x' }, 400, /endpoint/],
      [{ delivery: 'push', endpoint: 'http://93.184.215.14:0/x' }, 400, /port 0/],
      [{ delivery: 'push', endpoint: 'https://u:p@93.184.215.14/x' }, 422, /no credentials/],
      [{ delivery: 'sometimes' }, 400, /delivery/],
      [{ delivery: 'pull', filter: { minUrgency: 'urgent' } }, 400, /minUrgency/],
      [{ delivery: 'pull', since: 10_000_000 }, 400, /beyond the newest change/],
      [{ delivery: 'pull', colour: 'red' }, 400, /colour/],
    ];
    for (const [body, status, message] of cases) {
      const response = await call(hub.url, 'POST', '/api/subscriptions', {
        token: hub.tokens.web,
        body,
      });
      expect(response.status, JSON.stringify(body)).toBe(status);
      expect(response.body.error.message, JSON.stringify(body)).toMatch(message);
    }
    const badId = await call(hub.url, 'GET', '/api/subscriptions/nope', { token: hub.tokens.web });
    expect(badId.status).toBe(400);
    const admin = await call(hub.url, 'GET', '/api/subscriptions', { token: hub.adminToken });
    expect(admin.status).toBe(403);
  });

  it('refuses private and loopback endpoints unless the hub allows them', async () => {
    const strict = await startInProcessServe();
    try {
      const token = await runtimeToken(strict, 'acme', 'web');
      for (const endpoint of [
        'http://127.0.0.1:9/hook',
        'http://localhost:9/hook',
        'http://[::1]:9/hook',
        'http://169.254.169.254/latest/meta-data/',
        'http://10.0.0.1/hook',
        'http://[::ffff:127.0.0.1]/hook',
        // IPv6 forms that embed a private IPv4 address (IPv4-compatible, SIIT, NAT64, 6to4).
        'http://[::127.0.0.1]/hook',
        'http://[::ffff:0:127.0.0.1]/hook',
        'http://[64:ff9b:1::7f00:1]/hook',
        'http://[2002:7f00:1::]/hook',
      ]) {
        const response = await call(strict.url, 'POST', '/api/subscriptions', {
          token,
          body: { delivery: 'push', endpoint },
        });
        expect(response.status, endpoint).toBe(422);
        expect(response.body.error.code).toBe('endpoint_not_allowed');
      }
      expect(
        (await call(strict.url, 'GET', '/api/subscriptions', { token })).body.subscriptions,
      ).toEqual([]);
      // Globally routable addresses still pass, IPv4 and IPv6 (the hub has nothing to deliver).
      for (const endpoint of ['https://93.184.215.14/hook', 'https://[2606:4700::1111]/hook']) {
        const response = await call(strict.url, 'POST', '/api/subscriptions', {
          token,
          body: { delivery: 'push', endpoint },
        });
        expect(response.status, endpoint).toBe(201);
        expect(response.body.subscription.endpoint).toBe(endpoint);
      }
    } finally {
      expect(await strict.stop()).toBe(0);
      removeDir(strict.dataDir);
    }
  });
});

describe('delivery across restarts', () => {
  it('resumes after a restart, and after kill -9 delivers every change at least once', async () => {
    const dataDir = tempDir();
    const receiver = await startWebhookReceiver();
    // While the receiver is down the first hub retries without giving up (FAST's 3 attempts 40 ms
    // apart dead-lettered a change before a loaded machine's stop ended the hub) and seconds
    // apart, so the second hub finds each change still waiting, due within seconds.
    const first = await startHubProcess({
      dataDir,
      args: [
        '--allow-private-webhooks',
        '--webhook-attempts',
        '50',
        '--webhook-backoff-ms',
        '1000',
      ],
    });
    const token = await runtimeToken(first, 'acme', 'web');
    const { secret } = await subscribe({ delivery: 'push', endpoint: receiver.url }, token, first);
    // The receiver is down while these are written: they wait (retrying) in the store.
    receiver.respond = () => 503;
    const early = [];
    for (let n = 0; n < 3; n++)
      early.push(await write({ type: 'status', title: `e${n}` }, token, first));
    await receiver.waitFor((received) => received.length >= 1);
    expect(await first.stop()).toBe(0);
    receiver.respond = () => 204;
    const second = await startHubProcess({ dataDir, args: FAST });
    await receiver.waitFor(
      (received) => received.filter((hook) => hook.status === 204).length >= 3,
    );
    // Now kill -9 in the middle of a burst.
    const burst = Array.from({ length: 30 }, (_, n) =>
      write({ type: 'status', title: `b${n}` }, token, second),
    );
    const written = [...early, ...(await Promise.all(burst))];
    await second.kill();
    const third = await startHubProcess({ dataDir, args: FAST });
    try {
      await receiver.waitFor((received) => {
        const seqs = new Set(
          received.filter((hook) => hook.status === 204).map((hook) => hook.headers['webhook-id']),
        );
        return seqs.size >= written.length;
      });
      const payloads = await delivered(receiver.received, secret ?? '');
      const unique = [...new Set(payloads.map((payload) => payload.seq))];
      expect(unique.sort((a, b) => a - b)).toEqual(
        written.map((item) => item.seq).sort((a, b) => a - b),
      );
      // At least once, in order: a repeat (after the kill) only re-sends the change at the head.
      const seqs = payloads.map((payload) => payload.seq);
      for (let i = 1; i < seqs.length; i++)
        expect(seqs[i]).toBeGreaterThanOrEqual(seqs[i - 1] ?? 0);
    } finally {
      expect(await third.stop()).toBe(0);
      await receiver.close();
      removeDir(dataDir);
    }
  });
});
