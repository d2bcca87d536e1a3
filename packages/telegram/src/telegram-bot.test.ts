import { mkdirSync, writeFileSync } from 'node:fs';
import type { CtxbusClient } from '@ctxbus/client';
import { CtxbusError } from '@ctxbus/core/contract';
import { waitFor, waitUntil } from '@ctxbus/test-kit';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RecordedCall, TestBotApi } from './test-bot-api.js';
import { startTestBotApi } from './test-bot-api.js';
import type { TestBot, TestHub } from './test-hub.js';
import { BOT_TOKEN, startTestBot, startTestHub, tempDir } from './test-hub.js';

// The bot against a real hub (in-process, SQLite) and real grammY talking HTTP to a local
// server that speaks the Bot API. Chats 100 and 200 are served; 999 is a stranger.

let hub: TestHub;
let telegram: CtxbusClient;
let openclaw: CtxbusClient;
let claude: CtxbusClient;
let api: TestBotApi;
let dir: { path: string; remove(): void };
let running: TestBot | null = null;

beforeAll(async () => {
  hub = await startTestHub();
  telegram = await hub.client('telegram');
  openclaw = await hub.client('openclaw');
  claude = await hub.client('claude-code');
});

afterAll(async () => {
  await hub.close();
});

beforeEach(async () => {
  api = await startTestBotApi(BOT_TOKEN);
  dir = tempDir();
});

afterEach(async () => {
  await running?.stop();
  running = null;
  await api.close();
  dir.remove();
});

const statePath = () => `${dir.path}/state.json`;

async function start(extra: Parameters<typeof startTestBot>[3] = { statePath: statePath() }) {
  running = await startTestBot(hub, api, telegram, extra);
  return running;
}

const sentTo = (chatId: number, text: string) => (call: RecordedCall) =>
  call.method === 'sendMessage' &&
  call.params.chat_id === chatId &&
  String(call.params.text).includes(text);

async function blocking(title: string, extra: Record<string, unknown> = {}) {
  return openclaw.write({
    type: 'alert',
    title,
    content: `${title} body`,
    urgency: 'blocking',
    ...extra,
  });
}

describe('pushes', () => {
  // How fast a push arrives is the bench's to measure (./dev bench --only telegram).
  it('pushes a blocking item to every served chat', async () => {
    await start();
    expect(api.calls.some((c) => c.method === 'setMyCommands')).toBe(true);
    for (let i = 0; i < 10; i++) {
      const title = `Prod is down ${i}`;
      await blocking(title);
      await waitFor(api.nextCall(sentTo(100, title)), `the push of ${title}`);
      await waitFor(api.nextCall(sentTo(200, title)), `the push of ${title} to chat 200`);
    }
    const text = api.sent(100).find((m) => m.text.includes('Prod is down 0'))?.text;
    expect(text).toBe('[BLOCKING] alert: Prod is down 0\nProd is down 0 body\n— openclaw');
  });

  it('ignores a stranger chat and answers nothing there', async () => {
    await start();
    api.userSends(999, '/context');
    api.userSends(999, '/decide take over the bot');
    api.userSends(100, '/help');
    await waitFor(api.nextCall(sentTo(100, '/watch')), 'the /help reply in chat 100');
    expect(api.calls.filter((c) => c.params.chat_id === 999)).toEqual([]);
    const decisions = await claude.list({ type: 'decision' });
    expect(decisions.items.some((i) => i.title.includes('take over'))).toBe(false);
  });

  it('groups attention items into one digest when the timer fires', async () => {
    const bot = await start();
    for (const title of ['Review PR 12', 'Flaky test in e2e', 'Disk at 85%']) {
      await openclaw.write({
        type: 'status',
        title,
        summary: `${title} soon`,
        urgency: 'attention',
      });
    }
    await blocking('Digest marker');
    // The blocking item is ordered after the attention items: they have been queued by now.
    await waitFor(api.nextCall(sentTo(100, 'Digest marker')), 'the marker push');
    expect(api.sent(100).some((m) => m.text.includes('CTXBUS DIGEST'))).toBe(false);
    await bot.tick();
    const digests = api.sent(100).filter((m) => m.text.includes('CTXBUS DIGEST'));
    expect(digests).toHaveLength(1);
    for (const title of ['Review PR 12', 'Flaky test in e2e', 'Disk at 85%']) {
      expect(digests[0]?.text).toContain(title);
    }
    expect(digests[0]?.text).toContain('NEEDS ATTENTION (3):');
    // Sent once: the queue is empty afterwards.
    await bot.tick();
    expect(api.sent(100).filter((m) => m.text.includes('CTXBUS DIGEST'))).toHaveLength(1);
  });

  it('pushes an attention item tagged telegram at once; the others still wait for the digest', async () => {
    const bot = await start();
    await openclaw.write({ type: 'status', title: 'Routine note', urgency: 'attention' });
    await openclaw.write({
      type: 'status',
      title: 'Switched opus -> codex (96%)',
      urgency: 'attention',
      relevanceTags: ['handoff', 'telegram'],
    });
    const call = await waitFor(
      api.nextCall(sentTo(100, 'Switched opus -> codex (96%)')),
      'the push of the item addressed to Telegram',
    );
    expect(String(call.params.text)).toMatch(/^\[ATTENTION\] status: Switched opus -> codex/);
    // The untagged one, written before it, was queued instead of pushed.
    expect(api.sent(100).some((m) => m.text.includes('Routine note'))).toBe(false);
    await bot.tick();
    expect(api.sent(100).find((m) => m.text.includes('CTXBUS DIGEST'))?.text).toContain(
      'Routine note',
    );
  });

  it('waits retry_after on a 429 and sends again', async () => {
    const bot = await start();
    api.failNext('sendMessage', {
      error_code: 429,
      description: 'Too Many Requests: retry after 3',
      parameters: { retry_after: 3 },
    });
    await blocking('Rate limited push');
    await waitFor(api.nextCall(sentTo(200, 'Rate limited push')), 'the push after the 429');
    const attempts = api.calls.filter(sentTo(100, 'Rate limited push'));
    expect(attempts).toHaveLength(2);
    expect(bot.waits).toContain(3_000);
    expect(api.sent(100).filter((m) => m.text.includes('Rate limited push'))).toHaveLength(1);
  });

  it('retries a push Telegram failed on its side (5xx) instead of skipping it', async () => {
    const bot = await start();
    api.failNext('sendMessage', { error_code: 502, description: 'Bad Gateway' }, 2);
    await blocking('Pushed through a 502');
    await waitFor(api.nextCall(sentTo(200, 'Pushed through a 502')), 'the push after the 5xx');
    expect(api.calls.filter(sentTo(100, 'Pushed through a 502'))).toHaveLength(3);
    for (const chat of [100, 200]) {
      expect(api.sent(chat).filter((m) => m.text.includes('Pushed through a 502'))).toHaveLength(1);
    }
    expect(bot.waits).toHaveLength(2);
  });

  it('neither drops nor repeats a push across a restart', async () => {
    const first = await start();
    await blocking('Before restart');
    await waitFor(api.nextCall(sentTo(200, 'Before restart')), 'the first push');
    await first.stop();
    running = null;
    await blocking('While down 1');
    await blocking('While down 2');
    await start();
    await waitFor(api.nextCall(sentTo(200, 'While down 2')), 'the pushes missed while down');
    for (const chat of [100, 200]) {
      const texts = api.sent(chat).map((m) => m.text.split('\n')[0]);
      expect(texts.filter((t) => t?.includes('Before restart'))).toHaveLength(1);
      expect(texts.filter((t) => t?.includes('While down 1'))).toHaveLength(1);
      expect(texts.filter((t) => t?.includes('While down 2'))).toHaveLength(1);
    }
  });

  it('/watch limits a chat to tags, and the filter survives a restart', async () => {
    const first = await start();
    api.userSends(100, '/watch deploy');
    await waitFor(api.nextCall(sentTo(100, 'Now pushing only items tagged: deploy')), 'watch');
    await first.stop();
    running = null;
    await start();
    await blocking('Untagged outage');
    await blocking('Deploy stuck', { relevanceTags: ['deploy'] });
    await waitFor(api.nextCall(sentTo(100, 'Deploy stuck')), 'the tagged push');
    await waitFor(api.nextCall(sentTo(200, 'Deploy stuck')), 'the tagged push to 200');
    expect(api.sent(100).some((m) => m.text.includes('Untagged outage'))).toBe(false);
    expect(api.sent(200).some((m) => m.text.includes('Untagged outage'))).toBe(true);
  });
});

describe('the hub', () => {
  it('a revoked hub token ends the bot (failed rejects) instead of serving without pushes', async () => {
    const { client, tokenId } = await hub.minted('telegram');
    const bot = await startTestBot(hub, api, client, { statePath: statePath() });
    running = bot;
    await hub.store.revokeToken(tokenId);
    await expect(waitFor(bot.bot.failed, 'the bot to fail')).rejects.toThrow(/revoked/);
  });
});

describe('commands', () => {
  it('/decide writes a decision a Claude Code token sees', async () => {
    await start();
    api.userSends(100, '/decide Use SQLite for the bot state');
    await waitFor(api.nextCall(sentTo(100, 'Decision recorded')), 'the /decide reply');
    const { items } = await claude.list({ type: 'decision' });
    const decision = items.find((i) => i.title === 'Use SQLite for the bot state');
    expect(decision?.source.runtime).toBe('telegram');
    // Who wrote it, even without a username: the Telegram user id.
    expect(decision?.runtimeOptions).toMatchObject({ telegram: { chatId: 100, fromId: 100 } });
  });

  it("/decide records nothing from someone who is not one of the bot's approvers", async () => {
    await start();
    // Someone else in served chat 100 (a group's member), then an approver.
    api.userSends(100, '/decide Ship without review', 555);
    await waitFor(
      api.nextCall(sentTo(100, "user 555 is not one of this bot's approvers")),
      'the refusal',
    );
    api.userSends(100, '/decide Review every change', 200);
    await waitFor(api.nextCall(sentTo(100, 'Decision recorded')), 'the approver’s decision');
    const titles = (await claude.list({ type: 'decision' })).items.map((i) => i.title);
    expect(titles).toContain('Review every change');
    expect(titles).not.toContain('Ship without review');
  });

  it('/decide records nothing when the bot has no approvers', async () => {
    await start({ statePath: statePath(), approvers: [] });
    api.userSends(100, '/decide Ship without review');
    await waitFor(api.nextCall(sentTo(100, 'no approver is configured')), 'the refusal');
    const titles = (await claude.list({ type: 'decision' })).items.map((i) => i.title);
    expect(titles).not.toContain('Ship without review');
  });

  it('/context, /tasks, /search and /help answer in the chat', async () => {
    await start();
    await openclaw.write({ type: 'decision', title: 'Adopt grammY for Telegram', content: 'x' });
    api.userSends(100, '/context');
    await waitFor(api.nextCall(sentTo(100, 'Adopt grammY')), 'the /context reply');
    api.userSends(100, '/search grammY');
    await waitFor(api.nextCall(sentTo(100, 'Found')), 'the /search reply');
    api.userSends(100, '/tasks');
    await waitFor(
      api.nextCall((c) => c.method === 'sendMessage' && /tasks/i.test(String(c.params.text))),
      'the /tasks reply',
    );
    api.userSends(100, '/priorities');
    await waitFor(api.nextCall(sentTo(100, 'No shared-context directory')), '/priorities');
  });
});

describe('/priorities', () => {
  it("reads priorities.md's canonical section, split under Telegram's limit", async () => {
    const shared = `${dir.path}/shared-context`;
    mkdirSync(shared);
    const items = Array.from(
      { length: 150 },
      (_, i) => `${i + 1}. Priority number ${i + 1}: ${'ship it '.repeat(6)}`,
    );
    writeFileSync(
      `${shared}/priorities.md`,
      [
        '# Priorities',
        '',
        '## CANONICAL (curator)',
        ...items,
        '',
        '## Automated inputs',
        '- 2026-05-01 bot: appended idea',
      ].join('\n'),
    );
    await start({ statePath: statePath(), sharedContextDir: shared });
    api.userSends(100, '/priorities');
    await waitFor(api.nextCall(sentTo(100, 'Priority number 150:')), 'the last part');
    const parts = api.sent(100);
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) expect(part.text.length).toBeLessThanOrEqual(4_096);
    const text = parts.map((p) => p.text).join('\n');
    const lines = text.split('\n').map((line) => line.trim());
    expect(lines.filter((line) => /^\d+\. /.test(line))).toEqual(items.map((l) => l.trim()));
    expect(text).not.toContain('appended idea');
  });
});

describe('approvals', () => {
  async function taskWaitingForApproval(title: string) {
    const { task } = await openclaw.createTask({
      title,
      requiredCapabilities: ['code_execution'],
      input: { argv: ['pnpm', 'deploy'], cwd: '/tmp' },
    });
    for (;;) {
      const claimed = await claude.claimTask({ workerId: 'w1' });
      if (!claimed) throw new Error(`task ${task.id} was not claimable`);
      if (claimed.id !== task.id) {
        // An earlier test's task, out of the way. The hub's sweeps may end it first (an
        // earlier test turned the hub's clock past its wait): then it is out of the way too.
        await claude.cancelTask(claimed.id, 'not this test').catch((error: unknown) => {
          if (!CtxbusError.isInstance(error) || error.code !== 'conflict') throw error;
        });
        continue;
      }
      await claude.requestApproval(task.id, {
        token: claimed.lease?.token ?? 0,
        request: {
          argv: ['pnpm', 'deploy'],
          cwd: '/tmp',
          scriptHash: null,
          because: 'not_allowed',
        },
      });
      return task.id;
    }
  }

  async function approvalMessage(chatId: number, taskId: string) {
    const call = await waitFor(
      api.nextCall((c) => sentTo(chatId, taskId)(c) && c.params.reply_markup !== undefined),
      `the approval message for ${taskId}`,
    );
    const message = api.sent(chatId).find((m) => m.text === call.params.text);
    if (!message) throw new Error('no message');
    return message;
  }

  it("announces an approval once per chat: the origin rewriting the task's note pushes no new buttons", async () => {
    await start();
    const id = await taskWaitingForApproval('Deploy, asked once');
    await approvalMessage(100, id);
    for (let i = 0; i < 3; i++) {
      await openclaw.updateTask(id, { state: 'AUTH_REQUIRED', note: `APPROVED by alice ${i}` });
    }
    // Whatever comes after the notes has gone out; the approval's buttons went out once.
    await blocking('after the notes');
    await waitFor(api.nextCall(sentTo(100, 'after the notes')), 'the push after the notes');
    const withButtons = api
      .sent(100)
      .filter((m) => m.text.includes(id) && m.replyMarkup !== undefined);
    expect(withButtons).toHaveLength(1);
  });

  it('Allow once approves the exact command; a second tap is told it is done', async () => {
    await start();
    const id = await taskWaitingForApproval('Deploy the site');
    const message = await approvalMessage(100, id);
    expect(message.text).toContain('Command: ["pnpm","deploy"]');
    expect(message.replyMarkup?.inline_keyboard[0]?.map((b) => b.text)).toEqual([
      'Allow once',
      'Deny',
    ]);
    for (const button of message.replyMarkup?.inline_keyboard[0] ?? []) {
      expect(Buffer.byteLength(button.callback_data)).toBeLessThanOrEqual(64);
    }
    const query = api.userTaps(100, message.messageId, `a:${id}`);
    const answer = await waitFor(
      api.nextCall(
        (c) => c.method === 'answerCallbackQuery' && c.params.callback_query_id === query,
      ),
      'the answer to the tap',
    );
    expect(answer.params.text).toMatch(/Allowed once/);
    await waitFor(
      api.nextCall((c) => c.method === 'editMessageText'),
      'the edited message',
    );
    const { task } = await claude.task(id);
    expect(task.state).toBe('SUBMITTED');
    expect(task.approval).toMatchObject({ status: 'approved', decidedBy: 'telegram' });
    expect(task.approval?.token).toBeTruthy();
    // The worker gets it back with the signed approval.
    const again = await claude.claimTask({ workerId: 'w1' });
    expect(again?.id).toBe(id);
    expect(again?.approval?.status).toBe('approved');
    // The same button in the other chat: answered, never applied twice.
    const other = await approvalMessage(200, id);
    const second = api.userTaps(200, other.messageId, `d:${id}`);
    const stale = await waitFor(
      api.nextCall(
        (c) => c.method === 'answerCallbackQuery' && c.params.callback_query_id === second,
      ),
      'the answer to the stale tap',
    );
    expect(stale.params.text).toMatch(/Already approved by telegram/);
    expect((await claude.task(id)).task.approval?.status).toBe('approved');
  });

  it('a tap approves the command its message showed, never one the task asked about since', async () => {
    await start();
    const id = await taskWaitingForApproval('Run the deploy script');
    const inFirst = await approvalMessage(100, id);
    const inSecond = await approvalMessage(200, id);
    await answerTo(api.userTaps(100, inFirst.messageId, `a:${id}`), 'the first approval');
    // The runtime's holder claims it again and asks about another command: the task's own argv
    // (the hub refuses any other), in another real directory (the worker resolves it).
    const claimed = await claude.claimTask({ workerId: 'w1' });
    expect(claimed?.id).toBe(id);
    await claude.requestApproval(id, {
      token: claimed?.lease?.token ?? 0,
      request: {
        argv: ['pnpm', 'deploy'],
        cwd: '/srv',
        scriptHash: null,
        because: 'not_allowed',
      },
    });
    const newer = await waitFor(
      api.nextCall(
        (c) =>
          sentTo(200, id)(c) &&
          c.params.reply_markup !== undefined &&
          String(c.params.text).includes('"/srv"'),
      ),
      'the message about the other command',
    );
    // The older message (pnpm deploy in /tmp) decides nothing about it in /srv, approve or deny.
    for (const data of [`a:${id}`, `d:${id}`]) {
      const stale = await answerTo(
        api.userTaps(200, inSecond.messageId, data),
        'the answer to a tap on the older message',
      );
      expect(stale.params.text).toMatch(/Superseded: the task now asks about another command/);
    }
    const superseded = async () =>
      (await hub.store.listAudit('acme', { limit: 200 })).filter(
        (record) => record.subject === id && record.data.reason === 'superseded',
      );
    await waitUntil(async () => (await superseded()).length === 2, 'both taps audited');
    const { task } = await claude.task(id);
    expect(task.state).toBe('AUTH_REQUIRED');
    expect(task.approval).toMatchObject({
      status: 'pending',
      request: { argv: ['pnpm', 'deploy'], cwd: '/srv' },
    });
    // The newer message decides the command it shows.
    const message = api.sent(200).find((m) => m.text === newer.params.text);
    const denied = await answerTo(
      api.userTaps(200, message?.messageId ?? 0, `d:${id}`),
      'the answer to a tap on the newer message',
    );
    expect(denied.params.text).toMatch(/Denied/);
    expect((await claude.task(id)).task.approval?.status).toBe('denied');
  });

  it('Deny rejects the task', async () => {
    await start();
    const id = await taskWaitingForApproval('Drop the database');
    const message = await approvalMessage(100, id);
    const query = api.userTaps(100, message.messageId, `d:${id}`);
    const answer = await waitFor(
      api.nextCall(
        (c) => c.method === 'answerCallbackQuery' && c.params.callback_query_id === query,
      ),
      'the answer to the deny',
    );
    expect(answer.params.text).toMatch(/Denied/);
    const { task } = await claude.task(id);
    expect(task.state).toBe('REJECTED');
    expect(task.approval?.status).toBe('denied');
  });

  it('an expired approval is refused with a message', async () => {
    await start();
    const id = await taskWaitingForApproval('Rotate the keys');
    const message = await approvalMessage(100, id);
    hub.advance(31 * 60_000);
    try {
      await waitUntil(
        async () => (await claude.task(id)).task.state === 'REJECTED',
        'the hub to expire the approval',
      );
      const query = api.userTaps(100, message.messageId, `a:${id}`);
      const answer = await waitFor(
        api.nextCall(
          (c) => c.method === 'answerCallbackQuery' && c.params.callback_query_id === query,
        ),
        'the answer to the late tap',
      );
      expect(answer.params.text).toMatch(/Expired/);
      await waitFor(api.nextCall(sentTo(100, 'Expired')), 'the message saying so');
      const { task } = await claude.task(id);
      expect(task.approval?.status).not.toBe('approved');
    } finally {
      // Later tests' leases would be born expired on a clock 31 minutes ahead of the store's.
      hub.advance(-31 * 60_000);
    }
  });

  async function answerTo(query: string, what: string) {
    return waitFor(
      api.nextCall(
        (c) => c.method === 'answerCallbackQuery' && c.params.callback_query_id === query,
      ),
      what,
    );
  }

  it('refuses a tap from someone who is not an approver; the task still waits', async () => {
    await start();
    const id = await taskWaitingForApproval('Deploy from a stranger');
    const message = await approvalMessage(100, id);
    // User 555 can post in chat 100, but the bot was not told to take approvals from them.
    const query = api.userTaps(100, message.messageId, `a:${id}`, 555);
    const answer = await answerTo(query, 'the answer to the stranger');
    expect(answer.params.text).toMatch(/user 555 is not one of this bot's approvers/);
    expect(answer.params.show_alert).toBe(true);
    const { task } = await claude.task(id);
    expect([task.state, task.approval?.status]).toEqual(['AUTH_REQUIRED', 'pending']);
    // The hub's audit log has it, once however often it is repeated; a forged button too.
    await answerTo(api.userTaps(100, message.messageId, `d:${id}`, 555), 'a repeat');
    await answerTo(api.userTaps(100, message.messageId, `a:${id}`, 555), 'a repeat');
    await answerTo(api.userTaps(200, message.messageId, `a:${id}`), 'a tap in another chat');
    const refused = async () =>
      (await hub.store.listAudit('acme', { limit: 200 })).filter(
        (record) => record.kind === 'approval.refused' && record.subject === id,
      );
    await waitUntil(async () => (await refused()).length === 3, 'three refusals audited');
    expect((await refused()).map((record) => record.data)).toEqual([
      expect.objectContaining({
        decision: 'approve',
        runtime: 'telegram',
        role: 'refused_by_channel',
        reason: 'not_an_approver',
        by: 'Telegram user 555 in chat 100',
      }),
      expect.objectContaining({ decision: 'deny', reason: 'not_an_approver' }),
      expect.objectContaining({ reason: 'not_this_message', by: 'Telegram user 200 in chat 200' }),
    ]);
    // The same refused tap on another message is another attempt: audited too.
    await answerTo(api.userTaps(100, message.messageId + 1, `a:${id}`, 555), 'another message');
    await waitUntil(async () => (await refused()).length === 4, 'a fourth refusal audited');
    expect((await hub.store.verifyAudit('acme')).ok).toBe(true);
    // An approver's tap on the same message still decides it.
    const approved = await answerTo(api.userTaps(100, message.messageId, `d:${id}`), 'a deny');
    expect(approved.params.text).toMatch(/Denied/);
  });

  it('with no approver configured, every tap is refused, saying so', async () => {
    await start({ statePath: statePath(), approvers: [] });
    const id = await taskWaitingForApproval('Deploy with no approver');
    const message = await approvalMessage(100, id);
    const answer = await answerTo(
      api.userTaps(100, message.messageId, `a:${id}`),
      'the answer without approvers',
    );
    expect(answer.params.text).toMatch(/no approver configured .*--approver USER_ID/);
    const { task } = await claude.task(id);
    expect([task.state, task.approval?.status]).toEqual(['AUTH_REQUIRED', 'pending']);
  });

  it("refuses a button naming task B under task A's message; each message decides its own task", async () => {
    await start();
    const first = await taskWaitingForApproval('Task A: harmless');
    const messageA = await approvalMessage(100, first);
    const second = await taskWaitingForApproval('Task B: dangerous');
    const messageB = await approvalMessage(100, second);
    // Callback data for B, on A's message (a forged or replayed callback): refused.
    const forged = await answerTo(
      api.userTaps(100, messageA.messageId, `a:${second}`),
      'the answer to the mismatched tap',
    );
    expect(forged.params.text).toMatch(/does not belong to this message/);
    // And B's message in another chat id than the one the bot sent it to.
    const moved = await answerTo(
      api.userTaps(200, messageB.messageId, `a:${second}`),
      'the answer to a tap in another chat',
    );
    expect(moved.params.text).toMatch(/does not belong to this message/);
    expect((await claude.task(second)).task.approval?.status).toBe('pending');
    expect((await claude.task(first)).task.approval?.status).toBe('pending');
    // A's own button on A's message works, and leaves B waiting.
    const own = await answerTo(api.userTaps(100, messageA.messageId, `a:${first}`), 'A approved');
    expect(own.params.text).toMatch(/Allowed once/);
    expect((await claude.task(first)).task.approval?.status).toBe('approved');
    expect((await claude.task(second)).task.approval?.status).toBe('pending');
  });

  it('a request item: Approve writes one feedback decision; a repeat tap changes nothing', async () => {
    await start();
    const written = await openclaw.write({
      type: 'request',
      title: 'May I email the customer?',
      urgency: 'attention',
    });
    const id = written.results[0]?.id ?? '';
    const call = await waitFor(
      api.nextCall((c) => sentTo(100, 'May I email')(c) && c.params.reply_markup !== undefined),
      'the request message',
    );
    const message = api.sent(100).find((m) => m.text === call.params.text);
    const first = api.userTaps(100, message?.messageId ?? 0, `a:${id}`);
    await waitFor(
      api.nextCall(
        (c) => c.method === 'answerCallbackQuery' && c.params.callback_query_id === first,
      ),
      'the answer',
    );
    const second = api.userTaps(100, message?.messageId ?? 0, `d:${id}`);
    const stale = await waitFor(
      api.nextCall(
        (c) => c.method === 'answerCallbackQuery' && c.params.callback_query_id === second,
      ),
      'the answer to the repeat',
    );
    expect(stale.params.text).toMatch(/Already approved/);
    const feedback = (await claude.list({ tags: 'feedback' })).items;
    expect(feedback).toHaveLength(1);
    expect(feedback[0]).toMatchObject({
      type: 'decision',
      title: 'Approved: May I email the customer?',
    });
    expect(feedback[0]?.runtimeOptions).toMatchObject({ telegram: { requestId: id } });
  });
});

describe('conflicts', () => {
  const answerOf = (query: string, what: string) =>
    waitFor(
      api.nextCall(
        (c) => c.method === 'answerCallbackQuery' && c.params.callback_query_id === query,
      ),
      what,
    );

  it('pushes a conflict with one Keep button per value; a tap keeps it through the hub', async () => {
    await start();
    const key = `project/cache-${Date.now()}`;
    const first = await claude.write({ type: 'decision', title: 'Cache in Redis', key });
    const second = await openclaw.write({ type: 'decision', title: 'Cache in memory', key });
    const call = await waitFor(
      api.nextCall(
        (c) => sentTo(100, `[CONFLICT] ${key}`)(c) && c.params.reply_markup !== undefined,
      ),
      'the conflict message',
    );
    const message = api.sent(100).find((m) => m.text === call.params.text);
    if (!message) throw new Error('no message');
    expect(message.text).toContain('1. claude-code');
    expect(message.text).toContain('2. openclaw');
    const [conflict] = await claude.conflicts();
    if (!conflict) throw new Error('no conflict');
    expect(message.replyMarkup?.inline_keyboard[0]?.map((b) => b.text)).toEqual([
      'Keep 1: claude-code',
      'Keep 2: openclaw',
    ]);
    for (const button of message.replyMarkup?.inline_keyboard[0] ?? []) {
      expect(Buffer.byteLength(button.callback_data)).toBeLessThanOrEqual(64);
    }
    // A stranger's tap keeps nothing.
    const stranger = await answerOf(
      api.userTaps(100, message.messageId, `k1:${conflict.id}`, 555),
      'the answer to the stranger',
    );
    expect(stranger.params.text).toMatch(/not one of this bot's approvers/);
    const tap = await answerOf(
      api.userTaps(100, message.messageId, `k1:${conflict.id}`),
      'the answer to the tap',
    );
    expect(tap.params.text).toMatch(/Kept claude-code's value/);
    const held = await claude.list({ key });
    expect(held.items.map((item) => item.title)).toEqual(['Cache in Redis']);
    expect(held.items[0]?.runtimeOptions).toMatchObject({
      ctxbus: { chosenBy: 'telegram', restoredFrom: first.results[0]?.id },
    });
    expect(held.items[0]?.supersedes).toBe(second.results[0]?.id);
    expect(await claude.conflicts()).toEqual([]);
    // The same conflict in the other chat: told it is done, nothing kept twice.
    const other = await waitFor(
      api.nextCall(
        (c) => sentTo(200, `[CONFLICT] ${key}`)(c) && c.params.reply_markup !== undefined,
      ),
      'the conflict message in chat 200',
    );
    const otherMessage = api.sent(200).find((m) => m.text === other.params.text);
    const stale = await answerOf(
      api.userTaps(200, otherMessage?.messageId ?? 0, `k2:${conflict.id}`),
      'the answer to the stale tap',
    );
    expect(stale.params.text).toMatch(/already resolved by telegram/);
    expect((await claude.list({ key })).items.map((item) => item.title)).toEqual([
      'Cache in Redis',
    ]);
  });
});
