import { CtxbusError } from '@ctxbus/core/contract';
import { z } from 'zod';

/** An OpenAI-compatible chat endpoint (OpenAI, a local llama.cpp/vLLM/Ollama server…). */
export interface LlmSettings {
  /** The API base, e.g. `http://127.0.0.1:11434/v1` (`/chat/completions` is appended). */
  baseUrl: string;
  model: string;
  apiKey?: string;
  /** Whole-request timeout (default 15 000 ms). */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

/**
 * A model the host already has (OpenClaw's `api.runtime.llm.complete`: the gateway's own
 * provider, model and credentials), as a function from messages to the answer's text.
 */
export interface LlmCompleter {
  complete(
    messages: { role: 'system' | 'user'; content: string }[],
    signal: AbortSignal,
  ): Promise<string>;
  /** Named in the report when known. */
  model?: string;
  /** Whole-request timeout (default 15 000 ms). */
  timeoutMs?: number;
}

/** Either kind of model an enhancer may use. */
export type LlmOption = LlmSettings | LlmCompleter;

/**
 * One completion with either kind; a host's completer is cut off at its timeout with the same
 * `unavailable` error as an endpoint that does not answer.
 */
export async function completeWith(
  llm: LlmOption,
  messages: { role: 'system' | 'user'; content: string }[],
): Promise<string> {
  if (!('complete' in llm)) return chatCompletion(llm, messages);
  const timeoutMs = llm.timeoutMs ?? 15_000;
  const signal = AbortSignal.timeout(timeoutMs);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new CtxbusError('unavailable', `the host's model did not answer within ${timeoutMs} ms`),
        ),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([llm.complete(messages, signal), timedOut]);
  } catch (error) {
    if (CtxbusError.isInstance(error)) throw error;
    throw new CtxbusError('unavailable', `the host's model failed: ${(error as Error).message}`, {
      cause: error,
    });
  } finally {
    clearTimeout(timer);
  }
}

const chatResponseSchema = z.object({
  choices: z.array(z.object({ message: z.object({ content: z.string().nullable() }) })).min(1),
});

/**
 * Sends one chat completion and returns the assistant's text. Throws `CtxbusError`
 * (`unavailable` on network errors, timeouts and non-2xx answers; `internal` on a body that
 * is not the OpenAI shape).
 */
export async function chatCompletion(
  settings: LlmSettings,
  messages: { role: 'system' | 'user'; content: string }[],
): Promise<string> {
  const url = `${settings.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  const timeoutMs = settings.timeoutMs ?? 15_000;
  let response: Response;
  try {
    response = await (settings.fetch ?? fetch)(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(settings.apiKey && { authorization: `Bearer ${settings.apiKey}` }),
      },
      body: JSON.stringify({
        model: settings.model,
        messages,
        temperature: 0,
        response_format: { type: 'json_object' },
      }),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    const timedOut = (error as Error).name === 'TimeoutError';
    throw new CtxbusError(
      'unavailable',
      timedOut
        ? `the model at ${url} did not answer within ${timeoutMs} ms`
        : `cannot reach the model at ${url}: ${(error as Error).message}`,
      { cause: error },
    );
  }
  let body: unknown;
  try {
    body = await response.json();
  } catch (error) {
    throw new CtxbusError('unavailable', `the model at ${url} sent no JSON (${response.status})`, {
      cause: error,
    });
  }
  if (!response.ok) {
    throw new CtxbusError('unavailable', `the model at ${url} answered ${response.status}`, {
      details: { status: response.status },
    });
  }
  const parsed = chatResponseSchema.safeParse(body);
  if (!parsed.success) {
    throw new CtxbusError('internal', `the model at ${url} answered in an unexpected shape`);
  }
  return parsed.data.choices[0]?.message.content ?? '';
}
