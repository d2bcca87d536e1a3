// Shared by this package's tests (not part of the build): a real hub in process (the test
// kit's) with the repository's capabilities.yaml and a clock the test turns, and the bot wired
// to a local Bot API server (test-bot-api.ts) with the digest timer and retry waits turned by
// the test.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CtxbusClient } from '@ctxbus/client';
import { createClient } from '@ctxbus/client';
import type { RunningHub } from '@ctxbus/hub';
import { mintToken, startHub } from '@ctxbus/hub';
import type { Store } from '@ctxbus/store';
import { REPO_CAPABILITIES, startInProcessHub } from '@ctxbus/test-kit/in-process-hub';
import type { TelegramBotOptions } from './telegram-bot.js';
import { CtxbusTelegramBot } from './telegram-bot.js';
import type { TestBotApi } from './test-bot-api.js';

export const BOT_TOKEN = '123456:TEST-token_abcdefghijklmnopqrstuvwxyz';

export interface TestHub {
  url: string;
  store: Store;
  running: RunningHub;
  /** Moves the hub's clock (and the bot's) forward. */
  advance(ms: number): void;
  now(): Date;
  client(runtime: string): Promise<CtxbusClient>;
  /** A client and its token's id (to revoke it). */
  minted(runtime: string): Promise<{ client: CtxbusClient; tokenId: string }>;
  close(): Promise<void>;
}

export async function startTestHub(): Promise<TestHub> {
  let offset = 0;
  const now = () => new Date(Date.now() + offset);
  const hub = await startInProcessHub(
    { startHub, mintToken },
    {
      hub: {
        clock: now,
        taskSweepMs: 25,
        // Streams of revoked tokens end within this.
        tokenCacheMs: 100,
        capabilities: { file: REPO_CAPABILITIES, pollMs: 0 },
      },
    },
  );
  const minted = async (runtime: string) => {
    const { token, tokenId } = await hub.mint(runtime);
    return { client: createClient({ url: hub.url, token }), tokenId };
  };
  return {
    url: hub.url,
    store: hub.store,
    running: hub.running,
    now,
    advance(ms) {
      offset += ms;
    },
    minted,
    async client(runtime) {
      return (await minted(runtime)).client;
    },
    close: () => hub.close(),
  };
}

export interface TestBot {
  bot: CtxbusTelegramBot;
  statePath: string;
  /** Fires the digest timer, as its interval would. */
  tick(): Promise<void>;
  /** Every wait the retry logic asked for, in ms. */
  waits: number[];
  stop(): Promise<void>;
}

export function tempDir(): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), 'ctxbus-telegram-'));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

export async function startTestBot(
  hub: TestHub,
  api: TestBotApi,
  client: CtxbusClient,
  options: Partial<TelegramBotOptions> & { statePath: string },
): Promise<TestBot> {
  let tickCallback: (() => void) | null = null;
  const waits: number[] = [];
  const bot = await CtxbusTelegramBot.create({
    botToken: BOT_TOKEN,
    client,
    chats: [100, 200],
    // The people of chats 100 and 200 (the test API's user ids are their chats').
    approvers: [100, 200],
    apiRoot: api.apiRoot,
    clock: hub.now,
    pollTimeoutSeconds: 5,
    timers: {
      setInterval(callback) {
        tickCallback = callback;
        return 1;
      },
      clearInterval() {
        tickCallback = null;
      },
    },
    sleep: async (ms) => {
      waits.push(ms);
    },
    ...options,
  });
  await bot.start();
  await bot.startPolling();
  return {
    bot,
    statePath: options.statePath,
    waits,
    async tick() {
      if (!tickCallback) throw new Error('the digest timer is not set');
      await bot.flushDigest();
    },
    stop: () => bot.stop(),
  };
}
