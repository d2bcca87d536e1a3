// The Telegram bot's push latency: a real `ctxbus telegram` process follows a real hub's
// stream and sends to a local Bot API server (@ctxbus/telegram/testing). Timed: a blocking
// item's write (before the POST) -> the bot's sendMessage arriving at the Bot API server.

import { startTestBotApi } from '@ctxbus/telegram/testing';
import type { HubProcess } from '@ctxbus/test-kit';
import { removeDir, runtimeToken, spawnCli, tempDir, waitFor } from '@ctxbus/test-kit';
import type { Row } from './stats.ts';
import { ms, percentile } from './stats.ts';

const BOT_TOKEN = '424242:bench-token';

export async function benchTelegram(
  hub: HubProcess,
  items: number,
  log: (line: string) => void,
): Promise<Row[]> {
  const api = await startTestBotApi(BOT_TOKEN);
  const dir = tempDir('ctxbus-bench-telegram-');
  const bot = spawnCli(
    [
      'telegram',
      '--url',
      hub.url,
      '--chat',
      '1',
      '--state',
      `${dir}/state.json`,
      '--api-root',
      api.apiRoot,
    ],
    {
      env: {
        CTXBUS_TOKEN: await runtimeToken(hub, 'bench', 'telegram'),
        CTXBUS_TELEGRAM_TOKEN: BOT_TOKEN,
        CTXBUS_LOG_LEVEL: 'error',
      },
      timeoutMs: 600_000,
    },
  );
  try {
    await waitFor(
      api.nextCall((call) => call.method === 'getUpdates'),
      'the bot to start polling',
      { timeoutMs: 30_000 },
    );
    const writerToken = await runtimeToken(hub, 'bench', 'openclaw');
    const write = async (title: string) => {
      const response = await fetch(`${hub.url}/api/context`, {
        method: 'POST',
        headers: { authorization: `Bearer ${writerToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'alert', title, urgency: 'blocking' }),
      });
      if (!response.ok)
        throw new Error(`write failed: ${response.status} ${await response.text()}`);
    };
    log(`telegram: ${items} blocking items, write -> sendMessage`);
    const times: number[] = [];
    for (let index = -3; index < items; index++) {
      const title = `Bench blocker ${index}`;
      const received = api.nextCall(
        (call) => call.method === 'sendMessage' && String(call.params.text).includes(`${title}\n`),
      );
      const started = performance.now();
      await write(title);
      const call = await waitFor(received, `the push of ${title}`);
      if (index >= 0) times.push(call.at - started);
    }
    const p99 = percentile(times, 99);
    return [
      {
        section: 'telegram',
        metric: 'blocking item write -> sendMessage p50',
        value: ms(percentile(times, 50)),
      },
      {
        section: 'telegram',
        metric: 'blocking item write -> sendMessage p99',
        value: ms(p99),
        target: '<= 250 ms',
        ok: p99 <= 250,
      },
    ];
  } finally {
    bot.child.kill('SIGTERM');
    await bot.done.catch(() => {});
    await api.close();
    removeDir(dir);
  }
}
