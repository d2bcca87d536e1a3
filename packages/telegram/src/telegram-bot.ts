import type { Server } from 'node:http';
import { createServer } from 'node:http';
import type { CtxbusClient } from '@ctxbus/client';
import type { ContextItem, Logger, StreamEvent, Task } from '@ctxbus/core';
import { CtxbusError, conflictOf, silentLogger, taskStatusOf } from '@ctxbus/core';
import { createBackoff } from '@ctxbus/core/light';
import type { Context, Middleware } from 'grammy';
import { Bot, GrammyError, HttpError, webhookCallback } from 'grammy';
import type { InlineKeyboardMarkup } from 'grammy/types';
import type { BotDeps } from './bot-deps.js';
import { BOT_COMMANDS, commandsComposer, DEFAULT_DIGEST_INTERVAL_MS } from './commands.js';
import {
  approvalMessage,
  conflictText,
  digestEntry,
  digestText,
  pushText,
  requestText,
} from './format.js';
import type { RetryOptions } from './retry-transformer.js';
import { abortableSleep, retryTransformer } from './retry-transformer.js';
import { splitMessage } from './split-message.js';
import type { ChatState } from './state-file.js';
import { StateFile } from './state-file.js';
import { buttons, keepButtons, tapsComposer } from './taps.js';

/** Attention items with this tag are pushed at once instead of waiting for the digest. */
export const TELEGRAM_TAG = 'telegram';
// The ctxbus Telegram bot: one team (its hub token's) for a fixed set of chats. It follows the
// hub's stream from where it left off, pushes blocking items at once and attention items as a
// digest, answers commands, and turns taps on Approve / Deny into the hub's approval API (tasks)
// or feedback items (requests). Telegram speaks plain text here: no parse_mode, nothing to escape.

export { BOT_COMMANDS, DEFAULT_DIGEST_INTERVAL_MS } from './commands.js';

export interface DigestTimers {
  setInterval(callback: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
}

export interface TelegramBotOptions {
  /** The bot's token from @BotFather (never logged; redacted from error text). */
  botToken: string;
  /** A client with the bot's runtime token: its team is the team every chat serves. */
  client: CtxbusClient;
  /** The chats served; updates from any other chat are ignored (and logged without content). */
  chats: readonly number[];
  /**
   * Telegram user ids whose taps on Approve / Deny count. Anyone else who can post in a served
   * chat is refused; none given: every tap is refused, with an answer saying so.
   */
  approvers?: readonly number[];
  /** Where the stream cursor, digest queue and /watch tags live between runs. */
  statePath: string;
  /** Another Bot API server (tests, a self-hosted one): grammY's `client.apiRoot`. */
  apiRoot?: string;
  digestIntervalMs?: number;
  /** Seed 001's shared-context directory: /priorities reads its priorities.md. */
  sharedContextDir?: string;
  logger?: Logger;
  /** The digest's timer (tests turn it). */
  timers?: DigestTimers;
  /** The bot's clock: an approval past its expiry is refused before the hub is asked. */
  clock?: () => Date;
  /** Waits between retries (429 retry_after, network backoff); tests turn it. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  retry?: Omit<RetryOptions, 'logger' | 'sleep'>;
  /** Long-poll timeout of getUpdates, in seconds (default 30). */
  pollTimeoutSeconds?: number;
}

/** Replaces the bot token wherever it appears (grammY's URLs contain it). */
export function redactToken(text: string, token: string): string {
  return token ? text.split(token).join('<bot-token>') : text;
}

type Kind = 'approval' | 'conflict' | 'request' | 'blocking' | 'digest';
type Message = {
  text: string;
  keyboard?: InlineKeyboardMarkup;
  /** The id its buttons decide, and for an approval the digest of the command shown. */
  decides?: string;
  digest?: string;
};

export class CtxbusTelegramBot {
  readonly bot: Bot;
  private readonly client: CtxbusClient;
  private readonly logger: Logger;
  private readonly allowed: ReadonlySet<number>;
  private readonly approvers: ReadonlySet<number>;
  private readonly timers: DigestTimers;
  private readonly clock: () => Date;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  private readonly abort = new AbortController();
  private identity: { teamId: string; runtime: string } | null = null;
  private digestHandle: unknown = null;
  private pushLoop: Promise<void> | null = null;
  private polling: Promise<void> | null = null;
  private digesting: Promise<void> = Promise.resolve();
  private dirty = false;
  private fail: (error: unknown) => void = () => {};
  /**
   * Rejects when pushes can no longer go on (the hub refused the stream for good: a revoked
   * token, say); a runner ends the bot then instead of serving commands without pushes.
   */
  readonly failed: Promise<never> = new Promise<never>((_, reject) => {
    this.fail = reject;
  });
  private webhookServer: Server | null = null;

  private constructor(
    private readonly options: TelegramBotOptions,
    private readonly state: StateFile,
  ) {
    this.client = options.client;
    this.logger = options.logger ?? silentLogger;
    this.allowed = new Set(options.chats);
    this.approvers = new Set(options.approvers ?? []);
    this.timers = options.timers ?? {
      setInterval: (callback, ms) => setInterval(callback, ms),
      clearInterval: (handle) => clearInterval(handle as NodeJS.Timeout),
    };
    this.clock = options.clock ?? (() => new Date());
    this.sleep = options.sleep ?? abortableSleep;
    this.bot = new Bot(options.botToken, {
      client: {
        ...(options.apiRoot !== undefined && { apiRoot: options.apiRoot.replace(/\/+$/, '') }),
      },
    });
    this.bot.api.config.use(
      retryTransformer({ ...options.retry, logger: this.logger, sleep: this.sleep }),
    );
    this.bot.catch((error) => {
      this.logger.error({ error: this.redact(error.error) }, 'telegram update failed');
    });
    const deps: BotDeps = {
      client: this.client,
      logger: this.logger,
      state,
      clock: this.clock,
      redact: (error) => this.redact(error),
      reply: (ctx, text) => this.reply(ctx, text),
      chatState: (chatId) => this.chatState(chatId),
    };
    this.bot.use(servedChatsOnly(this.allowed, this.logger));
    this.bot.use(tapsComposer(deps, this.approvers));
    this.bot.use(commandsComposer(deps, options));
    // Observed by whoever awaits it; never an unhandled rejection for those who do not.
    this.failed.catch(() => {});
  }

  /** Opens the state file and builds the bot (nothing starts yet). */
  static async create(options: TelegramBotOptions): Promise<CtxbusTelegramBot> {
    if (options.chats.length === 0) {
      throw new CtxbusError(
        'validation_failed',
        'no chat to serve: pass --chat <id> or set CTXBUS_TELEGRAM_CHATS',
      );
    }
    return new CtxbusTelegramBot(options, await StateFile.open(options.statePath));
  }

  /** The error's text with the bot token taken out. */
  redact(error: unknown): string {
    const text = error instanceof Error ? error.message : String(error);
    return redactToken(text, this.options.botToken);
  }

  /** The team and runtime the hub token acts as (known once started). */
  get team(): string | null {
    return this.identity?.teamId ?? null;
  }

  /**
   * Checks the hub token, sets the command list, starts following the stream (resolved once the
   * hub confirms it is live) and the digest timer. Updates: `startPolling`, or a webhook.
   */
  async start(): Promise<void> {
    // Without `runtime` the bundle is formatted for (and names) the token's own runtime.
    const bundle = await this.client.shared({ tokenBudget: 100 });
    this.identity = { teamId: bundle.identity.teamId, runtime: bundle.identity.runtime };
    // Stoppable while Telegram is unreachable (the retries wait on this signal).
    const signal = this.abort.signal as Parameters<Bot['init']>[0];
    await this.bot.init(signal).catch((error: unknown) => {
      throw telegramRefusal(error) ?? error;
    });
    await this.bot.api.setMyCommands([...BOT_COMMANDS], undefined, signal);
    // New chats start at the hub's head: no backlog pushed on the first run.
    const head = (await this.client.list({ limit: 1 })).items[0]?.seq ?? 0;
    for (const chat of this.options.chats) this.state.chat(chat, head);
    await this.state.save();
    const ready = new Promise<void>((resolve, reject) => {
      this.pushLoop = this.follow(resolve).catch((error: unknown) => {
        reject(error);
        if (!this.abort.signal.aborted) {
          this.logger.error({ error: this.redact(error) }, 'the hub stream ended');
          this.fail(error);
        }
      });
    });
    await ready;
    this.digestHandle = this.timers.setInterval(() => {
      this.flushDigest().catch((error: unknown) =>
        this.logger.error({ error: this.redact(error) }, 'digest failed'),
      );
    }, this.options.digestIntervalMs ?? DEFAULT_DIGEST_INTERVAL_MS);
    this.logger.info(
      { team: this.identity.teamId, runtime: this.identity.runtime, chats: this.allowed.size },
      'ctxbus telegram bot started',
    );
  }

  /** Long polling (the default): resolves once polling runs; `stop` ends it. */
  async startPolling(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.polling = this.bot
        .start({
          timeout: this.options.pollTimeoutSeconds ?? 30,
          allowed_updates: ['message', 'callback_query'],
          onStart: () => resolve(),
        })
        .catch((error: unknown) => {
          reject(error);
          this.logger.error({ error: this.redact(error) }, 'telegram polling stopped');
        });
    });
  }

  /**
   * Webhook mode: Telegram POSTs updates to `url`; this serves them on `host:port` and accepts
   * only requests carrying `secret` in X-Telegram-Bot-Api-Secret-Token.
   */
  async startWebhook(settings: {
    url: string;
    secret: string;
    host?: string;
    port: number;
  }): Promise<{ port: number }> {
    const handle = webhookCallback(this.bot, 'http', { secretToken: settings.secret });
    const server = createServer((request, response) => {
      handle(request, response).catch((error: unknown) => {
        this.logger.error({ error: this.redact(error) }, 'webhook update failed');
        if (!response.headersSent) response.writeHead(500).end();
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(settings.port, settings.host ?? '127.0.0.1', () => resolve());
    });
    this.webhookServer = server;
    await this.bot.api.setWebhook(settings.url, {
      secret_token: settings.secret,
      allowed_updates: ['message', 'callback_query'],
    });
    const address = server.address();
    return { port: typeof address === 'object' && address ? address.port : settings.port };
  }

  async stop(): Promise<void> {
    this.abort.abort();
    if (this.webhookServer) {
      const server = this.webhookServer;
      this.webhookServer = null;
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    }
    if (this.digestHandle !== null) this.timers.clearInterval(this.digestHandle);
    this.digestHandle = null;
    if (this.bot.isRunning()) await this.bot.stop().catch(() => {});
    await this.polling;
    await this.pushLoop;
    await this.digesting;
    if (this.dirty) await this.state.save();
  }

  // --- pushes ----------------------------------------------------------------------------

  private chatState(chatId: number): ChatState {
    return this.state.chat(chatId, 0);
  }

  private async follow(onLive: () => void): Promise<void> {
    const cursors = this.options.chats.map((chat) => this.chatState(chat).lastSeq);
    const since = Math.min(...cursors);
    const events = this.client.stream({
      ...(since > 0 && { since }),
      signal: this.abort.signal,
      onReady: onLive,
      onReconnect: (error) =>
        this.logger.warn({ error: this.redact(error) }, 'hub stream dropped: resuming'),
    });
    for await (const event of events) {
      await this.handleEvent(event);
      if (this.abort.signal.aborted) return;
    }
  }

  private classify(item: ContextItem): Kind | null {
    // The bot's own writes (and the hub's notes of its decisions) are not news to the chat.
    if (item.source.runtime === this.identity?.runtime) return null;
    // Anyone can write an item that looks like this: the task itself is read before a button.
    if (taskStatusOf(item)?.state === 'AUTH_REQUIRED') return 'approval';
    // The hub's conflict items: a person keeps one value (resolutions are no news).
    if (conflictOf(item)?.status === 'open') return 'conflict';
    if (item.type === 'request' && item.urgency !== 'background') return 'request';
    if (item.urgency === 'blocking') return 'blocking';
    // A writer that addressed an item to Telegram (a model switch, say) wants it seen now.
    if (item.urgency === 'attention' && item.relevanceTags.includes(TELEGRAM_TAG))
      return 'blocking';
    if (item.urgency === 'attention') return 'digest';
    return null;
  }

  private watched(chat: ChatState, item: ContextItem, kind: string): boolean {
    if (kind === 'approval' || kind === 'conflict' || chat.watch.length === 0) return true;
    return item.relevanceTags.some((tag) => chat.watch.includes(tag));
  }

  private async handleEvent(event: StreamEvent): Promise<void> {
    const kind = event.event === 'context-added' ? this.classify(event.item) : null;
    let message: Message | null = null;
    for (const chatId of this.options.chats) {
      const chat = this.chatState(chatId);
      if (chat.lastSeq >= event.seq) continue;
      if (kind === null || !this.watched(chat, event.item, kind)) {
        // Nothing to say: a restart may see it again harmlessly, so no write is needed now.
        chat.lastSeq = event.seq;
        this.dirty = true;
        continue;
      }
      if (kind === 'digest') {
        chat.digest.push(digestEntry(event.seq, event.item));
      } else {
        message ??= await this.messageFor(kind, event.item);
        if (message === null) {
          chat.lastSeq = event.seq;
          this.dirty = true;
          continue;
        }
        const { decides, digest } = message;
        // One announcement per approval request and chat: a task's origin rewriting its note
        // (a new status item) must not push the buttons again and again.
        if (decides?.startsWith('task_') && this.state.hasButtons(decides, chatId, digest)) {
          chat.lastSeq = event.seq;
          this.dirty = true;
          continue;
        }
        const delivered = await this.deliver(
          chatId,
          message.text,
          message.keyboard,
          (messageId) => {
            if (decides !== undefined) {
              this.state.recordButtons(decides, chatId, messageId, digest);
            }
          },
        );
        if (delivered === 'stopped') return;
      }
      // Recorded only once Telegram accepted the push: a restart neither drops nor repeats it.
      chat.lastSeq = event.seq;
      await this.state.save();
      this.dirty = false;
    }
  }

  private async messageFor(
    kind: Exclude<Kind, 'digest'>,
    item: ContextItem,
  ): Promise<Message | null> {
    if (kind === 'blocking') return { text: pushText(item) };
    if (kind === 'conflict') {
      const report = conflictOf(item);
      if (!report) return { text: pushText(item) };
      return {
        text: conflictText(report),
        keyboard: keepButtons(item.id, report),
        decides: item.id,
      };
    }
    if (kind === 'request') {
      return { text: requestText(item), keyboard: buttons(item.id, 'Approve'), decides: item.id };
    }
    const taskId = item.source.taskId;
    if (!taskId) return { text: pushText(item) };
    let task: Task;
    try {
      ({ task } = await this.client.task(taskId));
    } catch (error) {
      this.logger.warn({ error: this.redact(error), taskId }, 'could not read the task');
      return { text: pushText(item) };
    }
    // Decided or lapsed before we got here: say what it is now, without buttons.
    if (task.state !== 'AUTH_REQUIRED' || task.approval?.status !== 'pending') return null;
    const { digest } = task.approval.request;
    const message = approvalMessage(task);
    if (!message.buttons) return { text: message.text };
    return {
      text: message.text,
      keyboard: buttons(task.id, 'Allow once'),
      decides: task.id,
      ...(typeof digest === 'string' && { digest }),
    };
  }

  /**
   * Sends `text` (split under Telegram's limit; the keyboard goes with the last part). Retries
   * network failures and Telegram's own (5xx, 429) until the bot stops; a refusal Telegram will
   * repeat (a 4xx: a blocked bot, a bad chat) is logged and skipped.
   */
  private async deliver(
    chatId: number,
    text: string,
    keyboard?: InlineKeyboardMarkup,
    onButtons?: (messageId: number) => void,
  ): Promise<'sent' | 'refused' | 'stopped'> {
    const parts = splitMessage(text);
    const backoff = createBackoff({ initialMs: 1_000, maxMs: 60_000 });
    for (let index = 0; index < parts.length; index++) {
      const last = index === parts.length - 1;
      for (;;) {
        if (this.abort.signal.aborted) return 'stopped';
        try {
          const sent = await this.bot.api.sendMessage(chatId, parts[index] ?? '', {
            ...(last && keyboard && { reply_markup: keyboard }),
            link_preview_options: { is_disabled: true },
          });
          if (last && keyboard) onButtons?.(sent.message_id);
          break;
        } catch (error) {
          if (error instanceof GrammyError && error.error_code !== 429 && error.error_code < 500) {
            this.logger.error(
              { chatId, code: error.error_code, error: this.redact(error) },
              'telegram refused a push; skipped',
            );
            return 'refused';
          }
          if (!(error instanceof HttpError) && !(error instanceof GrammyError)) throw error;
          const backoffMs = backoff.next();
          this.logger.warn(
            { chatId, backoffMs, error: this.redact(error) },
            'push failed: retrying',
          );
          await this.sleep(backoffMs, this.abort.signal);
        }
      }
    }
    return 'sent';
  }

  /** Sends every chat its queued attention items as one digest (the timer calls this). */
  flushDigest(): Promise<void> {
    const run = this.digesting.then(async () => {
      for (const chatId of this.options.chats) {
        const chat = this.chatState(chatId);
        if (chat.digest.length === 0) continue;
        const entries = [...chat.digest];
        const outcome = await this.deliver(chatId, digestText(entries));
        if (outcome === 'stopped') return;
        chat.digest = chat.digest.filter((entry) => !entries.includes(entry));
        await this.state.save();
      }
    });
    this.digesting = run.catch(() => {});
    return run;
  }

  // --- updates ---------------------------------------------------------------------------

  private async reply(ctx: Context, text: string): Promise<void> {
    const chatId = ctx.chat?.id;
    if (chatId === undefined) return;
    for (const part of splitMessage(text)) {
      await this.bot.api.sendMessage(chatId, part, { link_preview_options: { is_disabled: true } });
    }
  }
}

/** Drops an update from a chat the bot does not serve (logged without its content). */
function servedChatsOnly(allowed: ReadonlySet<number>, logger: Logger): Middleware<Context> {
  return async (ctx, next) => {
    const chatId = ctx.chat?.id;
    if (chatId === undefined || !allowed.has(chatId)) {
      logger.warn(
        {
          chatId: chatId ?? null,
          fromId: ctx.from?.id ?? null,
          update: Object.keys(ctx.update).filter((key) => key !== 'update_id'),
        },
        'ignored an update from a chat that is not served',
      );
      if (ctx.callbackQuery) await ctx.answerCallbackQuery().catch(() => {});
      return;
    }
    await next();
  };
}

/**
 * Telegram's refusal of the bot token (401) as the error it is: not authorised (exit 3), not
 * a hub that cannot be reached. Null for any other error.
 */
export function telegramRefusal(error: unknown): CtxbusError | null {
  if (!(error instanceof GrammyError) || error.error_code !== 401) return null;
  return new CtxbusError(
    'unauthorized',
    'Telegram refused the bot token (401 Unauthorized): check $CTXBUS_TELEGRAM_TOKEN (the token @BotFather gave)',
  );
}
