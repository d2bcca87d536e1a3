import { CtxbusError } from '@ctxbus/core';
import ky, { isHTTPError, isNetworkError, isTimeoutError } from 'ky';
import { z } from 'zod';

/** Turns texts into vectors. One label per provider: vectors of different labels never meet. */
export interface EmbeddingProvider {
  /** What the store files the vectors under: the model, and the dimensions when asked for. */
  readonly label: string;
  /** One vector per text, in order. Throws EmbeddingError. */
  embed(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]>;
}

/**
 * A failed embedding call. `refused`: the provider rejected the input (400, 413, 422), so
 * sending it again will not help. Anything else (a bad key, rate limits, outages) is treated as
 * transient: retried, never held against the items.
 */
export class EmbeddingError extends CtxbusError {
  readonly refused: boolean;

  constructor(message: string, options: { refused: boolean; status?: number; cause?: unknown }) {
    super('unavailable', message, {
      cause: options.cause,
      retryable: !options.refused,
      ...(options.status !== undefined && { details: { status: options.status } }),
    });
    this.refused = options.refused;
  }
}

export const embeddingsSettingsSchema = z.strictObject({
  /** Base URL of an OpenAI-compatible API (`https://api.openai.com/v1`); POSTs to `/embeddings`. */
  url: z.url({ protocol: /^https?$/ }),
  model: z.string().trim().min(1).max(200),
  /** Bearer key; optional for local servers. */
  apiKey: z.string().min(1).optional(),
  /** Ask for vectors of this length (models that support it, e.g. text-embedding-3-*). */
  dimensions: z.int().min(1).max(16_000).optional(),
  timeoutMs: z.int().min(100).max(600_000).default(30_000),
});

export type EmbeddingsSettings = z.input<typeof embeddingsSettingsSchema>;

const embeddingsResponseSchema = z.object({
  data: z
    .array(
      z.object({
        index: z.int().nonnegative(),
        embedding: z.array(z.number()).min(1),
      }),
    )
    .min(1),
});

/** Characters sent per text: past the models' input limits, the rest would be refused. */
export const MAX_EMBEDDING_CHARS = 8_000;

/**
 * An OpenAI-compatible embeddings API (OpenAI, Azure-style proxies, Ollama, LM Studio, vLLM,
 * text-embeddings-inference...): POST `{url}/embeddings` with `{ model, input: [...] }`.
 * No retries here: the background embedder retries with backoff, searches fall back.
 */
export function openAiEmbeddings(settings: EmbeddingsSettings): EmbeddingProvider {
  const options = embeddingsSettingsSchema.parse(settings);
  const http = ky.create({
    baseUrl: `${options.url.replace(/\/+$/, '')}/`,
    timeout: options.timeoutMs,
    retry: 0,
    headers: options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {},
  });
  const where = `the embeddings API at ${new URL(options.url).origin}`;
  return {
    label:
      options.dimensions === undefined ? options.model : `${options.model}@${options.dimensions}`,
    async embed(texts, signal) {
      if (texts.length === 0) return [];
      let body: unknown;
      try {
        body = await http
          .post('embeddings', {
            json: {
              model: options.model,
              input: texts.map((text) => text.slice(0, MAX_EMBEDDING_CHARS)),
              encoding_format: 'float',
              ...(options.dimensions !== undefined && { dimensions: options.dimensions }),
            },
            ...(signal && { signal }),
          })
          .json();
      } catch (error) {
        if (isHTTPError(error)) {
          const status = error.response.status;
          // ky has read the body into error.data; OpenAI-style errors say why in error.message.
          const data = error.data as { error?: { message?: unknown } } | string | undefined;
          const detail =
            typeof data === 'string'
              ? data
              : typeof data?.error?.message === 'string'
                ? data.error.message
                : '';
          return Promise.reject(
            new EmbeddingError(
              `${where} answered ${status}${detail ? `: ${detail.slice(0, 300)}` : ''}`,
              {
                refused: status === 400 || status === 413 || status === 422,
                status,
                cause: error,
              },
            ),
          );
        }
        const reason =
          isTimeoutError(error) || isNetworkError(error) || error instanceof TypeError
            ? (error as Error).message
            : String(error);
        throw new EmbeddingError(`cannot reach ${where}: ${reason}`, {
          refused: false,
          cause: error,
        });
      }
      const parsed = embeddingsResponseSchema.safeParse(body);
      if (!parsed.success || parsed.data.data.length !== texts.length) {
        throw new EmbeddingError(
          `${where} sent an unexpected response (${parsed.success ? `${parsed.data.data.length} vectors for ${texts.length} texts` : parsed.error.issues[0]?.message})`,
          { refused: false },
        );
      }
      const vectors: Float32Array[] = new Array(texts.length);
      for (const entry of parsed.data.data) {
        if (entry.index < texts.length) vectors[entry.index] = Float32Array.from(entry.embedding);
      }
      if (Array.from(vectors).some((vector) => vector === undefined)) {
        throw new EmbeddingError(`${where} sent vectors with missing indexes`, { refused: false });
      }
      return vectors;
    },
  };
}
