import { waitFor } from '@ctxbus/test-kit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CtxbusTelegramBot } from './telegram-bot.js';
import type { TestBotApi } from './test-bot-api.js';
import { startTestBotApi } from './test-bot-api.js';
import type { TestHub } from './test-hub.js';
import { BOT_TOKEN, startTestHub, tempDir } from './test-hub.js';

// Webhook mode: Telegram POSTs updates; only those carrying the secret token are handled.

let hub: TestHub;
let api: TestBotApi;
let bot: CtxbusTelegramBot;
let port: number;
const dir = tempDir();

beforeAll(async () => {
  hub = await startTestHub();
  api = await startTestBotApi(BOT_TOKEN);
  const client = await hub.client('telegram');
  bot = await CtxbusTelegramBot.create({
    botToken: BOT_TOKEN,
    client,
    chats: [100],
    apiRoot: api.apiRoot,
    statePath: `${dir.path}/state.json`,
  });
  await bot.start();
  ({ port } = await bot.startWebhook({
    url: 'https://bot.example.test/telegram',
    secret: 'hook-secret',
    port: 0,
  }));
});

afterAll(async () => {
  await bot.stop();
  await api.close();
  await hub.close();
  dir.remove();
});

const update = (updateId: number, text: string) => ({
  update_id: updateId,
  message: {
    message_id: updateId,
    date: 0,
    chat: { id: 100, type: 'private', first_name: 'a' },
    from: { id: 100, is_bot: false, first_name: 'a' },
    text,
    entities: [{ type: 'bot_command', offset: 0, length: text.split(' ')[0]?.length ?? 0 }],
  },
});

async function post(body: unknown, secret?: string) {
  return fetch(`http://127.0.0.1:${port}/`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(secret !== undefined && { 'x-telegram-bot-api-secret-token': secret }),
    },
    body: JSON.stringify(body),
  });
}

it('registers the webhook with its secret', async () => {
  const call = await waitFor(
    api.nextCall((c) => c.method === 'setWebhook'),
    'the setWebhook call',
  );
  expect(call.params).toMatchObject({
    url: 'https://bot.example.test/telegram',
    secret_token: 'hook-secret',
  });
});

it('refuses an update without the right secret token and handles one with it', async () => {
  expect((await post(update(1, '/decide forged'), 'wrong')).status).toBe(401);
  expect((await post(update(2, '/decide forged'))).status).toBe(401);
  expect((await post(update(3, '/help'), 'hook-secret')).status).toBe(200);
  await waitFor(
    api.nextCall((c) => c.method === 'sendMessage' && String(c.params.text).includes('/watch')),
    'the /help reply',
  );
  expect(api.calls.filter((c) => String(c.params.text ?? '').includes('forged'))).toEqual([]);
  const reader = await hub.client('claude-code');
  const { items } = await reader.list({ type: 'decision' });
  expect(items).toEqual([]);
});
