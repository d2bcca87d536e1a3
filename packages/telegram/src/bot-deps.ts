import type { CtxbusClient } from '@ctxbus/client';
import type { Logger } from '@ctxbus/core';
import type { Context } from 'grammy';
import type { ChatState, StateFile } from './state-file.js';

/** What the bot's composers share with it: the hub, the state file, the clock, how to answer. */
export interface BotDeps {
  client: CtxbusClient;
  logger: Logger;
  state: StateFile;
  clock: () => Date;
  /** The error's text with the bot token taken out. */
  redact(error: unknown): string;
  /** Sends `text` to the update's chat, split at Telegram's limit. */
  reply(ctx: Context, text: string): Promise<void>;
  chatState(chatId: number): ChatState;
}
