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
