import { silentLogger } from '@ctxbus/core';
import type { ApiCallFn } from 'grammy';
import { HttpError } from 'grammy';
import { describe, expect, it } from 'vitest';
import { retryTransformer } from './retry-transformer.js';
import { redactToken } from './telegram-bot.js';

// The transformer on its own, with a scripted `prev` (the Bot API's answers) and its waits
// recorded instead of slept; the bot's tests drive it against the local Bot API server.

function scripted(answers: (() => unknown)[]) {
  const calls: string[] = [];
  const prev = (async (method: string) => {
    calls.push(method);
    const next = answers.shift();
    if (!next) throw new Error('no more answers');
    return next();
  }) as unknown as ApiCallFn;
  return { prev, calls };
}

describe('retryTransformer', () => {
  it('backs off exponentially on network errors, then succeeds', async () => {
    const waits: number[] = [];
    const network = () => {
      throw new HttpError('Network request for sendMessage failed', new Error('ECONNREFUSED'));
    };
    const { prev, calls } = scripted([network, network, network, () => ({ ok: true, result: 1 })]);
    const transform = retryTransformer({
      logger: silentLogger,
      sleep: async (ms) => {
        waits.push(ms);
      },
    });
    const result = await transform(prev, 'sendMessage', { chat_id: 1, text: 'x' });
    expect(result).toEqual({ ok: true, result: 1 });
    expect(calls).toHaveLength(4);
    expect(waits).toEqual([500, 1_000, 2_000]);
  });

  it('gives up after maxRetries, and leaves other errors and getUpdates alone', async () => {
    const network = () => {
      throw new HttpError('down', new Error('ECONNRESET'));
    };
    const sleep = async () => {};
    const limited = retryTransformer({ logger: silentLogger, sleep, maxRetries: 1 });
    await expect(
      limited(scripted([network, network]).prev, 'sendMessage', {} as never),
    ).rejects.toThrow('down');
    const bad = { ok: false, error_code: 400, description: 'Bad Request: chat not found' };
    expect(await limited(scripted([() => bad]).prev, 'sendMessage', {} as never)).toEqual(bad);
    const polling = scripted([network]);
    await expect(limited(polling.prev, 'getUpdates', {} as never)).rejects.toThrow('down');
    expect(polling.calls).toHaveLength(1);
  });
});

describe('redactToken', () => {
  it('takes the bot token out of any text', () => {
    const token = '123:abc';
    expect(
      redactToken(`GET https://api.telegram.org/bot${token}/getMe failed (${token})`, token),
    ).toBe('GET https://api.telegram.org/bot<bot-token>/getMe failed (<bot-token>)');
  });
});
