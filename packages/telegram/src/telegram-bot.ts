import type { Server } from 'node:http';
import { createServer } from 'node:http';
import type { CtxbusClient } from '@ctxbus/client';
import type {
  ConflictReport,
  ContextItem,
  Logger,
  StreamEvent,
  Task,
  TaskState,
} from '@ctxbus/core';
import { CtxbusError, conflictOf, silentLogger, tagSchema, taskStatusOf } from '@ctxbus/core';
import { createBackoff, stableId } from '@ctxbus/core/light';
import type { Context } from 'grammy';
import { Bot, GrammyError, HttpError, webhookCallback } from 'grammy';
import type { InlineKeyboardMarkup } from 'grammy/types';
import {
  approvalText,
  conflictText,
  digestEntry,
  digestText,
  itemLine,
  pushText,
  requestText,
  taskLine,
} from './format.js';
import { readPriorities } from './priorities.js';
import type { RetryOptions } from './retry-transformer.js';
import { abortableSleep, retryTransformer } from './retry-transformer.js';
import { splitMessage } from './split-message.js';
import type { ChatState } from './state-file.js';
import { StateFile } from './state-file.js';

/** Attention items with this tag are pushed at once instead of waiting for the digest. */
export const TELEGRAM_TAG = 'telegram';
// The ctxbus Telegram bot: one team (its hub token's) for a fixed set of chats. It follows the
// hub's stream from where it left off, pushes blocking items at once and attention items as a
// digest, answers commands, and turns taps on Approve / Deny into the hub's approval API (tasks)
// or feedback items (requests). Telegram speaks plain text here: no parse_mode, nothing to escape.

export const DEFAULT_DIGEST_INTERVAL_MS = 10 * 60_000;

export const BOT_COMMANDS = [
  { command: 'context', description: "the team's shared context" },
  { command: 'tasks', description: 'active tasks and their state' },
  { command: 'search', description: 'search the context: /search <words>' },
  { command: 'decide', description: 'record a decision: /decide <text>' },
  { command: 'priorities', description: "the team's priorities (shared-context/priorities.md)" },
  { command: 'watch', description: 'push only these tags: /watch <tag> ... | /watch all' },
  { command: 'help', description: 'what this bot does' },
] as const;

const ACTIVE_STATES: TaskState[] = ['SUBMITTED', 'WORKING', 'INPUT_REQUIRED', 'AUTH_REQUIRED'];

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

type Verdict = 'approve' | 'deny';

interface TapOutcome {
  /** Whether this tap changed anything (false: stale, repeated, expired, unknown). */
  applied: boolean;
  /** The short answer to the tap (answerCallbackQuery). */
  answer: string;
  /** The line the original message gets (its buttons go); null: leave the message. */
  outcome: string | null;
}

/** Replaces the bot token wherever it appears (grammY's URLs contain it). */
export function redactToken(text: string, token: string): string {
  return token ? text.split(token).join('<bot-token>') : text;
}

const CALLBACK = /^([ad]):(task_[0-9a-f-]{36}|[0-9a-f-]{36})$/;
/** Keep value 1 or 2 of conflict <id> (the values are read from the conflict on the tap). */
const KEEP_CALLBACK = /^k([12]):([0-9a-f-]{36})$/;

type Kind = 'approval' | 'conflict' | 'request' | 'blocking' | 'digest';
type Message = { text: string; keyboard?: InlineKeyboardMarkup; decides?: string };

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
  private readonly inflight = new Set<string>();
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
    this.registerHandlers();
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
        const decides = message.decides;
        const delivered = await this.deliver(
          chatId,
          message.text,
          message.keyboard,
          (messageId) => {
            if (decides !== undefined) this.state.recordButtons(decides, chatId, messageId);
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
    return {
      text: approvalText(task),
      keyboard: buttons(task.id, 'Allow once'),
      decides: task.id,
    };
  }

  /**
   * Sends `text` (split under Telegram's limit; the keyboard goes with the last part). Retries
   * network failures until the bot stops; a refusal Telegram will repeat (a blocked bot, a bad
   * chat) is logged and skipped.
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
          if (error instanceof GrammyError && error.error_code !== 429) {
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

  private registerHandlers(): void {
    this.bot.use(async (ctx, next) => {
      const chatId = ctx.chat?.id;
      if (chatId === undefined || !this.allowed.has(chatId)) {
        this.logger.warn(
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
    });
    this.bot.command('help', (ctx) => this.reply(ctx, helpText(this.options)));
    this.bot.command('start', (ctx) => this.reply(ctx, helpText(this.options)));
    this.bot.command('context', (ctx) =>
      this.guard(ctx, async () => {
        const bundle = await this.client.shared({ runtime: 'openclaw' });
        return bundle.formatted.trim() || 'The shared context is empty.';
      }),
    );
    this.bot.command('tasks', (ctx) =>
      this.guard(ctx, async () => {
        const { tasks } = await this.client.tasks({
          state: ACTIVE_STATES,
          order: 'newest',
          limit: 50,
        });
        if (tasks.length === 0) return 'No active tasks.';
        return [`Active tasks (${tasks.length}):`, ...tasks.map(taskLine)].join('\n');
      }),
    );
    this.bot.command('search', (ctx) =>
      this.guard(ctx, async () => {
        const query = ctx.match.trim();
        if (!query) return 'Usage: /search <words>';
        const { results } = await this.client.search({ query, limit: 10 });
        if (results.length === 0) return `Nothing found for "${query}".`;
        return [`Found ${results.length}:`, ...results.map((r) => itemLine(r.item))].join('\n');
      }),
    );
    this.bot.command('decide', (ctx) =>
      this.guard(ctx, async () => {
        const text = ctx.match.trim();
        if (!text) return 'Usage: /decide <the decision>';
        const title = text.split('\n')[0]?.slice(0, 300) ?? text;
        const written = await this.client.write({
          id: stableId('ctxbus-telegram-decide', String(ctx.chat?.id), String(ctx.msg?.message_id)),
          type: 'decision',
          title,
          content: text,
          relevanceTags: ['telegram'],
          runtimeOptions: {
            telegram: { chatId: ctx.chat?.id ?? null, from: ctx.from?.username ?? null },
          },
        });
        return `Decision recorded: ${title} (${written.results[0]?.id ?? '?'})`;
      }),
    );
    this.bot.command('priorities', (ctx) =>
      this.guard(ctx, async () => {
        const dir = this.options.sharedContextDir;
        if (!dir) return 'No shared-context directory is configured (--shared-context-dir).';
        const text = await readPriorities(dir);
        if (text === null) return `No priorities.md in ${dir}.`;
        return text || 'priorities.md has no canonical section yet.';
      }),
    );
    this.bot.command('watch', (ctx) =>
      this.guard(ctx, async () => {
        const chat = this.chatState(ctx.chat.id);
        const words = ctx.match.split(/[\s,]+/).filter(Boolean);
        if (words.length === 0) {
          return chat.watch.length === 0
            ? 'Pushing everything (blocking items at once, attention items in the digest).'
            : `Pushing only items tagged: ${chat.watch.join(', ')} (approvals always).`;
        }
        if (words.length === 1 && ['all', 'off', 'none', '*'].includes(words[0] ?? '')) {
          chat.watch = [];
        } else {
          const bad = words.find((word) => !tagSchema.safeParse(word).success);
          if (bad !== undefined) return `Not a tag: ${bad}`;
          chat.watch = [...new Set(words.map((word) => word.replace(/^#/, '')))];
        }
        await this.state.save();
        return chat.watch.length === 0
          ? 'Watching everything again.'
          : `Now pushing only items tagged: ${chat.watch.join(', ')} (approvals always).`;
      }),
    );
    this.bot.on('callback_query:data', (ctx) => this.onTap(ctx));
    this.bot.on('message:text', (ctx) =>
      this.reply(ctx, 'Unknown command. /help lists what I can do.'),
    );
  }

  private async reply(ctx: Context, text: string): Promise<void> {
    const chatId = ctx.chat?.id;
    if (chatId === undefined) return;
    for (const part of splitMessage(text)) {
      await this.bot.api.sendMessage(chatId, part, { link_preview_options: { is_disabled: true } });
    }
  }

  /** Runs a command; a hub error becomes a short reply (the token never shows). */
  private async guard(ctx: Context, work: () => Promise<string>): Promise<void> {
    let text: string;
    try {
      text = await work();
    } catch (error) {
      this.logger.error({ error: this.redact(error) }, 'command failed');
      text = `Sorry: ${this.redact(error)}`;
    }
    await this.reply(ctx, text);
  }

  private async onTap(ctx: Context): Promise<void> {
    const data = ctx.callbackQuery?.data ?? '';
    const keep = KEEP_CALLBACK.exec(data);
    if (keep) {
      await this.decide(ctx, keep[2] ?? '', 'keep', (who) =>
        this.keepValue(keep[2] ?? '', keep[1] === '1' ? 0 : 1, who, ctx.chat?.id),
      );
      return;
    }
    const match = CALLBACK.exec(data);
    if (!match) {
      await ctx.answerCallbackQuery({ text: 'Unknown button.' });
      return;
    }
    const verdict: Verdict = match[1] === 'a' ? 'approve' : 'deny';
    const id = match[2] ?? '';
    await this.decide(ctx, id, verdict, (who) =>
      id.startsWith('task_')
        ? this.decideTask(id, verdict, who, ctx.chat?.id)
        : this.decideRequest(id, verdict, who, ctx.chat?.id),
    );
  }

  /** Checks the tap (approver, button bound to this message), runs `work` once, answers. */
  private async decide(
    ctx: Context,
    id: string,
    verdict: Verdict | 'keep',
    work: (who: string) => Promise<TapOutcome>,
  ): Promise<void> {
    const who = ctx.from?.username ? `@${ctx.from.username}` : `user ${ctx.from?.id ?? '?'}`;
    const refusal = this.tapRefusal(ctx, id);
    if (refusal !== null) {
      this.logger.warn(
        { fromId: ctx.from?.id ?? null, chatId: ctx.chat?.id ?? null, id, verdict },
        `refused a tap: ${refusal}`,
      );
      await ctx.answerCallbackQuery({ text: refusal.slice(0, 200), show_alert: true });
      return;
    }
    if (this.inflight.has(id)) {
      await ctx.answerCallbackQuery({ text: 'Already being decided.', show_alert: true });
      return;
    }
    this.inflight.add(id);
    let outcome: TapOutcome;
    try {
      outcome = await work(who);
    } catch (error) {
      this.logger.error({ error: this.redact(error), id }, 'decision failed');
      outcome = { applied: false, answer: `Not decided: ${this.redact(error)}`, outcome: null };
    } finally {
      this.inflight.delete(id);
    }
    await ctx.answerCallbackQuery({
      text: outcome.answer.slice(0, 200),
      show_alert: !outcome.applied,
    });
    const message = ctx.callbackQuery?.message;
    if (outcome.outcome !== null && message && 'text' in message) {
      await ctx
        .editMessageText(`${message.text ?? ''}\n\n${outcome.outcome}`.slice(0, 4_096), {
          reply_markup: { inline_keyboard: [] },
        })
        .catch((error: unknown) =>
          this.logger.warn({ error: this.redact(error) }, 'could not edit the message'),
        );
    }
    if (!outcome.applied && ctx.chat) await this.reply(ctx, outcome.answer);
  }

  /**
   * Why a tap on a button deciding `id` does not count, or null when it does: it must come from
   * one of the bot's approvers (Telegram user ids, --approver), on a message the bot sent with
   * the buttons for exactly `id`.
   */
  private tapRefusal(ctx: Context, id: string): string | null {
    if (this.approvers.size === 0) {
      return 'Not decided: this bot has no approver configured (ctxbus telegram --approver USER_ID), so no tap decides anything.';
    }
    const from = ctx.from?.id;
    if (from === undefined || !this.approvers.has(from)) {
      return `Not decided: user ${from ?? '?'} is not one of this bot's approvers.`;
    }
    const message = ctx.callbackQuery?.message;
    const chat = ctx.chat?.id;
    if (
      message === undefined ||
      chat === undefined ||
      !this.state.buttonsOf(id, chat, message.message_id)
    ) {
      return 'Not decided: this button does not belong to this message (it decides nothing here).';
    }
    return null;
  }

  private async decideTask(
    id: string,
    verdict: Verdict,
    who: string,
    chatId: number | undefined,
  ): Promise<TapOutcome> {
    const { task } = await this.client.task(id);
    const stale = staleTask(task);
    if (stale) return stale;
    const expiresAt = task.approval?.expiresAt ?? '';
    if (Date.parse(expiresAt) <= this.clock().getTime()) {
      return {
        applied: false,
        answer: `This approval expired at ${expiresAt}: nothing was approved.`,
        outcome: `Expired at ${expiresAt}: not approved.`,
      };
    }
    try {
      const digest = task.approval?.request.digest;
      const decided = await this.client.decideTask(id, verdict, {
        ...(typeof digest === 'string' && { digest }),
        note: `${verdict === 'approve' ? 'allowed once' : 'denied'} in Telegram by ${who}${chatId === undefined ? '' : ` (chat ${chatId})`}`,
      });
      const done = verdict === 'approve' ? 'Allowed once' : 'Denied';
      return {
        applied: true,
        answer: `${done}: ${decided.state === 'SUBMITTED' ? 'the worker may run it now' : `the task is ${decided.state}`}.`,
        outcome: `${done} by ${who}.`,
      };
    } catch (error) {
      // Decided or lapsed meanwhile (another chat, the CLI, the hub's sweep): say what won.
      if (CtxbusError.isInstance(error) && error.code === 'conflict') {
        const { task: now } = await this.client.task(id);
        return (
          staleTask(now) ?? {
            applied: false,
            answer: `Not decided: ${error.message}`,
            outcome: null,
          }
        );
      }
      throw error;
    }
  }

  /** Keeps value `index` (0: the older, 1: the newer) of conflict `id` through the hub. */
  private async keepValue(
    id: string,
    index: 0 | 1,
    who: string,
    chatId: number | undefined,
  ): Promise<TapOutcome> {
    let item: ContextItem;
    try {
      item = await this.client.get(id);
    } catch (error) {
      if (CtxbusError.isInstance(error) && error.code === 'not_found') {
        const line = 'This conflict is gone (expired or removed): nothing kept.';
        return { applied: false, answer: line, outcome: line };
      }
      throw error;
    }
    const report = conflictOf(item);
    const value = report?.values[index];
    if (!report || !value) {
      return { applied: false, answer: 'Not a conflict: nothing kept.', outcome: null };
    }
    try {
      await this.client.resolveConflict(id, {
        keep: value.id,
        note: `kept in Telegram by ${who}${chatId === undefined ? '' : ` (chat ${chatId})`}`,
      });
    } catch (error) {
      // Resolved elsewhere, or replaced by a newer conflict on the key: say so, keep nothing.
      if (CtxbusError.isInstance(error) && error.code === 'conflict') {
        const line = `Not kept: ${error.message}`;
        return { applied: false, answer: line, outcome: line };
      }
      throw error;
    }
    return {
      applied: true,
      answer: `Kept ${value.runtime}'s value of ${report.key}.`,
      outcome: `Kept ${value.runtime}'s value (${value.title}) by ${who}.`,
    };
  }

  private async decideRequest(
    id: string,
    verdict: Verdict,
    who: string,
    chatId: number | undefined,
  ): Promise<TapOutcome> {
    let request: ContextItem;
    try {
      request = await this.client.get(id);
    } catch (error) {
      if (CtxbusError.isInstance(error) && error.code === 'not_found') {
        return {
          applied: false,
          answer: 'This request is gone (expired or withdrawn): nothing recorded.',
          outcome: 'Gone: expired or withdrawn.',
        };
      }
      throw error;
    }
    const word = verdict === 'approve' ? 'approved' : 'denied';
    // One feedback item per request (its id comes from the request's): a second tap, here or
    // in another chat, finds the first answer instead of recording another.
    const feedbackId = stableId('ctxbus-telegram-feedback', id);
    let earlier: ContextItem | null = null;
    try {
      const written = await this.client.write({
        id: feedbackId,
        type: 'decision',
        title: `${verdict === 'approve' ? 'Approved' : 'Denied'}: ${request.title}`.slice(0, 300),
        content: `${who} ${word} the request "${request.title}" from ${request.source.runtime} in Telegram.`,
        relevanceTags: ['feedback', word],
        runtimeOptions: {
          telegram: { requestId: id, verdict: word, by: who, chatId: chatId ?? null },
        },
      });
      if (written.results[0]?.status === 'existing') earlier = written.items[0] ?? null;
    } catch (error) {
      // The same id with other content: someone answered first (another verdict or person).
      if (!CtxbusError.isInstance(error) || error.code !== 'conflict') throw error;
      earlier = await this.client.get(feedbackId);
    }
    if (earlier) {
      const first = (earlier.runtimeOptions as { telegram?: { verdict?: string; by?: string } })
        .telegram;
      const by = first?.by ? ` by ${first.by}` : '';
      return {
        applied: false,
        answer: `Already ${first?.verdict ?? 'answered'}${by}: nothing changed.`,
        outcome: `${first?.verdict === 'approved' ? 'Approved' : 'Denied'}${by}.`,
      };
    }
    await this.client.consume(id).catch(() => {});
    return {
      applied: true,
      answer: `${verdict === 'approve' ? 'Approved' : 'Denied'}: feedback recorded.`,
      outcome: `${verdict === 'approve' ? 'Approved' : 'Denied'} by ${who}.`,
    };
  }
}

function buttons(id: string, approveLabel: string): InlineKeyboardMarkup {
  return {
    inline_keyboard: [
      [
        { text: approveLabel, callback_data: `a:${id}` },
        { text: 'Deny', callback_data: `d:${id}` },
      ],
    ],
  };
}

/** One Keep button per value; the tap names the conflict and the value's place (k1, k2). */
function keepButtons(id: string, report: ConflictReport): InlineKeyboardMarkup {
  return {
    inline_keyboard: [
      report.values.map((value, index) => ({
        text: `Keep ${index + 1}: ${value.runtime}`.slice(0, 60),
        callback_data: `k${index + 1}:${id}`,
      })),
    ],
  };
}

/** What a tap on a task no longer waiting for approval is told; null while it waits. */
function staleTask(task: Task): TapOutcome | null {
  const approval = task.approval;
  if (task.state === 'AUTH_REQUIRED' && approval?.status === 'pending') return null;
  if (approval?.status === 'approved') {
    const line = `Already approved by ${approval.decidedBy ?? '?'}.`;
    return { applied: false, answer: `${line} Nothing changed.`, outcome: line };
  }
  if (approval?.status === 'denied') {
    const line = `Already denied by ${approval.decidedBy ?? '?'}.`;
    return { applied: false, answer: `${line} Nothing changed.`, outcome: line };
  }
  if (approval?.status === 'expired' || task.error?.code === 'approval_expired') {
    const line = `Expired: nobody answered by ${approval?.expiresAt ?? 'the deadline'}; the task was ${task.state}.`;
    return { applied: false, answer: `${line} Nothing approved.`, outcome: line };
  }
  const line = `The task is ${task.state}: it waits for no approval.`;
  return { applied: false, answer: line, outcome: line };
}

function helpText(options: TelegramBotOptions): string {
  const minutes = Math.round((options.digestIntervalMs ?? DEFAULT_DIGEST_INTERVAL_MS) / 60_000);
  return [
    "ctxbus: your team's shared context, urgent items and approvals.",
    '',
    ...BOT_COMMANDS.map((c) => `/${c.command} - ${c.description}`),
    '',
    `Blocking items arrive at once; attention items in a digest every ${minutes} min.`,
    'Approvals come with buttons: Allow once (this exact command, this task only) or Deny.',
    'Conflicts (two runtimes wrote one key differently) come with Keep 1 / Keep 2 buttons.',
    options.approvers && options.approvers.length > 0
      ? 'Only the approvers this bot was started with may tap them.'
      : 'No approver is configured: taps decide nothing (ctxbus telegram --approver USER_ID).',
  ].join('\n');
}

/**
 * Telegram's refusal of the bot token (401) as the error it is: not authorised (exit 3), not
 * a hub that cannot be reached. Null for any other error.
 */
export function telegramRefusal(error: unknown): CtxbusError | null {
  if (!(error instanceof GrammyError) || error.error_code !== 401) return null;
  return new CtxbusError(
    'unauthorized',
    'Telegram refused the bot token (401 Unauthorized): check --bot-token or $CTXBUS_TELEGRAM_TOKEN',
  );
}
