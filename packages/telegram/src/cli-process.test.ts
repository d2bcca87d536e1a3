import { existsSync } from 'node:fs';
import { createClient } from '@ctxbus/client';
import { CLI, runCli, spawnCli, useHubProcess, waitFor } from '@ctxbus/test-kit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TestBotApi } from './test-bot-api.js';
import { startTestBotApi } from './test-bot-api.js';
import { tempDir } from './test-hub.js';

// The real `ctxbus telegram` process against a real `ctxbus serve` and the local Bot API
// server: a push arrives, the bot token never shows in its output, and SIGTERM ends it with 0.

const BOT_TOKEN = '987654:CLI-secret-token_zyxwvutsrqponmlkjihgfedcba';
const built = existsSync(CLI);

describe.skipIf(!built)(
  `ctxbus telegram${built ? '' : ' (skipped: the CLI is not built; run the build first)'}`,
  () => {
    const hub = useHubProcess({
      tokens: { telegram: ['acme', 'telegram'], claw: ['acme', 'openclaw'] },
    });
    let api: TestBotApi;
    let dir: { path: string; remove(): void };

    /** `ctxbus telegram` serving chat 100 of the hub, through the local Bot API server. */
    const botArgs = () => [
      'telegram',
      '--url',
      hub.url,
      '--chat',
      '100',
      '--state',
      `${dir.path}/s.json`,
      '--api-root',
      api.apiRoot,
    ];

    beforeEach(async () => {
      api = await startTestBotApi(BOT_TOKEN);
      dir = tempDir();
    });
    afterEach(async () => {
      await api.close();
      dir.remove();
    });

    it('pushes a blocking item, never prints the bot token, and stops on SIGTERM', async () => {
      const run = spawnCli(
        [
          'telegram',
          '--url',
          hub.url,
          '--chat',
          '100',
          '--state',
          `${dir.path}/state.json`,
          '--api-root',
          api.apiRoot,
        ],
        {
          env: { CTXBUS_TOKEN: hub.tokens.telegram, CTXBUS_TELEGRAM_TOKEN: BOT_TOKEN },
        },
      );
      await waitFor(
        api.nextCall((c) => c.method === 'getUpdates'),
        'the bot to start polling',
      );
      const claw = createClient({ url: hub.url, token: hub.tokens.claw });
      await claw.write({ type: 'alert', title: 'CLI push', urgency: 'blocking' });
      const call = await waitFor(
        api.nextCall(
          (c) => c.method === 'sendMessage' && String(c.params.text).includes('CLI push'),
        ),
        'the push',
      );
      expect(call.params.chat_id).toBe(100);
      run.child.kill('SIGTERM');
      const result = await run.done;
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toContain('telegram bot for team acme: long polling, 1 chat(s)');
      expect(result.stdout + result.stderr).not.toContain(BOT_TOKEN);
    });

    it('a bot token Telegram refuses is exit 3 (not authorised), with the reason', async () => {
      const result = await runCli(botArgs(), {
        env: { CTXBUS_TOKEN: hub.tokens.telegram, CTXBUS_TELEGRAM_TOKEN: '123:not-the-bot' },
      });
      expect(result.code, result.stderr).toBe(3);
      expect(result.stderr).toMatch(/Telegram refused the bot token \(401 Unauthorized\)/);
      expect(result.stderr).not.toContain('123:not-the-bot');
    });

    it('stops on Ctrl-C while Telegram is unreachable', async () => {
      await api.close();
      const run = spawnCli(botArgs(), {
        env: { CTXBUS_TOKEN: hub.tokens.telegram, CTXBUS_TELEGRAM_TOKEN: BOT_TOKEN },
      });
      let stderr = '';
      const retrying = new Promise<void>((resolve) => {
        run.child.stderr?.on('data', (chunk: Buffer) => {
          stderr += chunk.toString();
          if (stderr.includes('telegram unreachable: retrying')) resolve();
        });
      });
      await waitFor(retrying, 'the bot to retry an unreachable Telegram');
      run.child.kill('SIGINT');
      const result = await waitFor(run.done, 'the bot to stop on SIGINT');
      expect(result.code).toBe(0);
      api = await startTestBotApi(BOT_TOKEN);
    });

    it('refuses to start without a chat or a bot token, saying which', async () => {
      const noChat = await runCli(['telegram', '--url', hub.url, '--token', hub.tokens.telegram], {
        env: { CTXBUS_TELEGRAM_TOKEN: BOT_TOKEN },
      });
      expect(noChat.code).toBe(2);
      expect(noChat.stderr).toContain('no chat to serve');
      const noToken = await runCli(['telegram', '--url', hub.url, '--chat', '1'], {
        env: { CTXBUS_TELEGRAM_TOKEN: '' },
      });
      expect(noToken.code).toBe(2);
      expect(noToken.stderr).toContain('CTXBUS_TELEGRAM_TOKEN');
    });

    it('a wrong bot token fails with Telegram’s answer, the token redacted', async () => {
      const result = await runCli(
        [
          'telegram',
          '--url',
          hub.url,
          '--token',
          hub.tokens.telegram,
          '--chat',
          '1',
          '--state',
          `${dir.path}/s.json`,
          '--api-root',
          api.apiRoot,
        ],
        { env: { CTXBUS_TELEGRAM_TOKEN: '111:wrong-token-value' } },
      );
      expect(result.code).not.toBe(0);
      expect(result.stderr).toMatch(/401|Unauthorized/);
      expect(result.stderr).not.toContain('wrong-token-value');
    });
  },
);
