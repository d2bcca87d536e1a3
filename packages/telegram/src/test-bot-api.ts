// Shared by this package's tests (not part of the build): a local server speaking the Telegram
// Bot API wire format, so the real grammY client talks to it over HTTP (`client.apiRoot`).
// It answers the methods the bot uses, keeps a long-poll update queue, records every call, and
// can fail the next call of a method (a 429 with retry_after, say).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';

export interface RecordedCall {
  method: string;
  params: Record<string, unknown>;
  /** performance.now() when the request arrived. */
  at: number;
}

export interface SentMessage {
  chatId: number;
  messageId: number;
  text: string;
  replyMarkup?: { inline_keyboard: { text: string; callback_data: string }[][] };
}

export interface InjectedFailure {
  error_code: number;
  description: string;
  parameters?: { retry_after?: number };
}

export interface TestBotApi {
  /** The apiRoot for grammY (no trailing slash). */
  apiRoot: string;
  calls: RecordedCall[];
  /** The messages the bot sent (sendMessage calls that succeeded). */
  sent(chatId?: number): SentMessage[];
  /** Resolves with the first call (already made or later) that matches. */
  nextCall(match: (call: RecordedCall) => boolean): Promise<RecordedCall>;
  /** A person in `chatId` sends `text` (a leading /command gets its bot_command entity). */
  /** A person in `chatId` (user id `fromId`, default the chat's id) sends `text`. */
  userSends(chatId: number, text: string, fromId?: number): void;
  /**
   * A person in `chatId` (user id `fromId`, default the chat's id) taps the button with `data`
   * under the bot's message `messageId`.
   */
  userTaps(chatId: number, messageId: number, data: string, fromId?: number): string;
  /** The next `times` calls of `method` fail with `failure`. */
  failNext(method: string, failure: InjectedFailure, times?: number): void;
  close(): Promise<void>;
}

const BOT_USER = { id: 4242, is_bot: true, first_name: 'ctxbus', username: 'ctxbus_test_bot' };

export async function startTestBotApi(token: string): Promise<TestBotApi> {
  const calls: RecordedCall[] = [];
  const messages: SentMessage[] = [];
  const updates: { update_id: number; [key: string]: unknown }[] = [];
  const failures = new Map<string, { failure: InjectedFailure; times: number }>();
  const watchers: { match: (call: RecordedCall) => boolean; resolve: (c: RecordedCall) => void }[] =
    [];
  let pollers: (() => void)[] = [];
  let nextUpdateId = 1;
  let nextMessageId = 1;
  let queryId = 1;

  const wakePollers = () => {
    for (const wake of pollers.splice(0)) wake();
  };
  const enqueue = (update: Record<string, unknown>) => {
    updates.push({ update_id: nextUpdateId++, ...update });
    wakePollers();
  };
  const chat = (id: number) => ({ id, type: 'private', first_name: `user${id}` });
  const user = (id: number) => ({ id, is_bot: false, first_name: `user${id}` });

  const record = (method: string, params: Record<string, unknown>) => {
    const call = { method, params, at: performance.now() };
    calls.push(call);
    for (const watcher of [...watchers]) {
      if (watcher.match(call)) {
        watchers.splice(watchers.indexOf(watcher), 1);
        watcher.resolve(call);
      }
    }
  };

  async function getUpdates(params: Record<string, unknown>, request: IncomingMessage) {
    const offset = Number(params.offset ?? 0);
    // Confirmed updates (below the offset) are gone, as on Telegram.
    while (updates.length > 0 && (updates[0]?.update_id ?? 0) < offset) updates.shift();
    const timeout = Number(params.timeout ?? 0);
    if (updates.length === 0 && timeout > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, timeout * 1000);
        function done() {
          clearTimeout(timer);
          pollers = pollers.filter((wake) => wake !== done);
          resolve();
        }
        pollers.push(done);
        request.once('close', done);
      });
    }
    const limit = Number(params.limit ?? 100);
    return updates.slice(0, limit);
  }

  async function answer(method: string, params: Record<string, unknown>, req: IncomingMessage) {
    switch (method) {
      case 'getMe':
        return { ...BOT_USER, can_join_groups: true, can_read_all_group_messages: false };
      case 'deleteWebhook':
      case 'setWebhook':
      case 'setMyCommands':
      case 'answerCallbackQuery':
        return true;
      case 'getUpdates':
        return getUpdates(params, req);
      case 'sendMessage': {
        const message: SentMessage = {
          chatId: Number(params.chat_id),
          messageId: nextMessageId++,
          text: String(params.text),
          ...(params.reply_markup !== undefined && {
            replyMarkup: params.reply_markup as SentMessage['replyMarkup'],
          }),
        };
        messages.push(message);
        return {
          message_id: message.messageId,
          date: Math.floor(Date.now() / 1000),
          chat: chat(message.chatId),
          from: BOT_USER,
          text: message.text,
        };
      }
      case 'editMessageText':
        return {
          message_id: Number(params.message_id),
          date: Math.floor(Date.now() / 1000),
          chat: chat(Number(params.chat_id)),
          from: BOT_USER,
          text: String(params.text),
        };
      default:
        return undefined;
    }
  }

  async function handle(request: IncomingMessage, response: ServerResponse) {
    const send = (status: number, body: unknown) => {
      if (response.destroyed) return;
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(JSON.stringify(body));
    };
    const match = /^\/bot([^/]+)\/(\w+)$/.exec(request.url ?? '');
    if (!match || match[1] !== token) {
      send(401, { ok: false, error_code: 401, description: 'Unauthorized' });
      return;
    }
    const method = match[2] ?? '';
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const params = (raw ? JSON.parse(raw) : {}) as Record<string, unknown>;
    record(method, params);
    const failure = failures.get(method);
    if (failure) {
      failure.times -= 1;
      if (failure.times <= 0) failures.delete(method);
      send(failure.failure.error_code, { ok: false, ...failure.failure });
      return;
    }
    const result = await answer(method, params, request);
    if (result === undefined) {
      send(404, { ok: false, error_code: 404, description: `Not Found: method ${method}` });
      return;
    }
    send(200, { ok: true, result });
  }

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) {
        response.writeHead(500, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ ok: false, error_code: 500, description: String(error) }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;

  return {
    apiRoot: `http://127.0.0.1:${port}`,
    calls,
    sent: (chatId) =>
      chatId === undefined ? [...messages] : messages.filter((m) => m.chatId === chatId),
    nextCall(match) {
      const found = calls.find(match);
      if (found) return Promise.resolve(found);
      return new Promise((resolve) => watchers.push({ match, resolve }));
    },
    userSends(chatId, text, fromId = chatId) {
      const command = /^\/\w+(@\w+)?/.exec(text);
      enqueue({
        message: {
          message_id: nextMessageId++,
          date: Math.floor(Date.now() / 1000),
          chat: chat(chatId),
          from: user(fromId),
          text,
          ...(command && {
            entities: [{ type: 'bot_command', offset: 0, length: command[0].length }],
          }),
        },
      });
    },
    userTaps(chatId, messageId, data, fromId = chatId) {
      const id = String(queryId++);
      const original = messages.find((m) => m.messageId === messageId);
      enqueue({
        callback_query: {
          id,
          from: user(fromId),
          chat_instance: `ci${chatId}`,
          data,
          message: {
            message_id: messageId,
            date: Math.floor(Date.now() / 1000),
            chat: chat(chatId),
            from: BOT_USER,
            text: original?.text ?? '',
          },
        },
      });
      return id;
    },
    failNext(method, failure, times = 1) {
      failures.set(method, { failure, times });
    },
    close: () =>
      new Promise<void>((resolve) => {
        wakePollers();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
