import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

// A local stand-in for an OpenAI-compatible embeddings API (POST /v1/embeddings), speaking its
// wire format, with a small deterministic "model": each word goes to a dimension by hash, and
// words of one concept (see `concepts`) share a dimension, so "automobile" is near "car" while
// full-text search cannot match them. Tests can fail, refuse or slow down requests.

export interface EmbeddingsRequestRecord {
  model: string;
  inputs: string[];
  dimensions?: number;
  authorization: string | undefined;
}

export interface EmbeddingsServer {
  /** Base URL, as `--embeddings-url` takes it (`http://127.0.0.1:port/v1`). */
  url: string;
  requests: EmbeddingsRequestRecord[];
  /** Inputs embedded so far (all requests). */
  inputCount(): number;
  /** The next `count` requests fail with `status` (default 503). */
  failNext(count: number, status?: number): void;
  /** Inputs containing this text make their request fail with 400 (the provider refuses). */
  refuseInputsContaining: string | null;
  /** Every request fails with 503 while true. */
  down: boolean;
  /** Added to every response, in ms. */
  delayMs: number;
  /** The vector the stand-in model gives a text (what the server sends). */
  embed(text: string, dimensions?: number): number[];
  close(): Promise<void>;
}

export interface EmbeddingsServerOptions {
  /** Bearer key required (none: any or no key is accepted). */
  apiKey?: string;
  /** Vector length when the request does not ask for one (default 64). */
  dimensions?: number;
  /** Groups of words that mean the same thing to the model. */
  concepts?: readonly (readonly string[])[];
}

export const DEFAULT_CONCEPTS: readonly (readonly string[])[] = [
  ['car', 'cars', 'automobile', 'automobiles', 'vehicle', 'vehicles'],
  ['doctor', 'doctors', 'physician', 'physicians', 'clinic'],
  ['purchase', 'purchased', 'buy', 'bought', 'acquire', 'acquired'],
  ['database', 'databases', 'postgres', 'postgresql', 'sqlite', 'storage'],
  ['happy', 'glad', 'joyful', 'delighted'],
];

function hash(text: string): number {
  let value = 2166136261;
  for (let index = 0; index < text.length; index++) {
    value ^= text.charCodeAt(index);
    value = Math.imul(value, 16777619);
  }
  return value >>> 0;
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function send(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}

/** Starts the stand-in on loopback. */
export async function startEmbeddingsServer(
  options: EmbeddingsServerOptions = {},
): Promise<EmbeddingsServer> {
  const conceptOf = new Map<string, string>();
  for (const group of options.concepts ?? DEFAULT_CONCEPTS)
    for (const word of group) conceptOf.set(word, group[0] as string);
  let failures: { count: number; status: number } = { count: 0, status: 503 };

  const embed = (text: string, dimensions = options.dimensions ?? 64): number[] => {
    const vector = new Array<number>(dimensions).fill(0);
    for (const word of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
      const key = conceptOf.get(word) ?? word;
      const slot = hash(key) % dimensions;
      vector[slot] = (vector[slot] ?? 0) + 1;
    }
    return vector;
  };

  const server: Server = createServer(async (request, response) => {
    const body = await readBody(request);
    if (state.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, state.delayMs));
    if (request.method !== 'POST' || request.url !== '/v1/embeddings') {
      send(response, 404, { error: { message: `no route ${request.method} ${request.url}` } });
      return;
    }
    if (options.apiKey && request.headers.authorization !== `Bearer ${options.apiKey}`) {
      send(response, 401, {
        error: { message: 'Incorrect API key provided', type: 'invalid_request_error' },
      });
      return;
    }
    let parsed: { model?: unknown; input?: unknown; dimensions?: unknown };
    try {
      parsed = JSON.parse(body) as typeof parsed;
    } catch {
      send(response, 400, { error: { message: 'invalid JSON body' } });
      return;
    }
    const inputs = typeof parsed.input === 'string' ? [parsed.input] : parsed.input;
    if (
      typeof parsed.model !== 'string' ||
      !Array.isArray(inputs) ||
      inputs.length === 0 ||
      !inputs.every((input) => typeof input === 'string')
    ) {
      send(response, 400, {
        error: { message: "'model' and 'input' (a string or strings) are required" },
      });
      return;
    }
    const dimensions = typeof parsed.dimensions === 'number' ? parsed.dimensions : undefined;
    state.requests.push({
      model: parsed.model,
      inputs: inputs as string[],
      ...(dimensions !== undefined && { dimensions }),
      authorization: request.headers.authorization,
    });
    if (state.down) {
      send(response, 503, { error: { message: 'The server is overloaded' } });
      return;
    }
    if (failures.count > 0) {
      failures.count -= 1;
      send(response, failures.status, { error: { message: 'injected failure' } });
      return;
    }
    const refused = state.refuseInputsContaining;
    if (refused !== null && (inputs as string[]).some((input) => input.includes(refused))) {
      send(response, 400, {
        error: {
          message: 'This input is refused by the test server',
          type: 'invalid_request_error',
        },
      });
      return;
    }
    send(response, 200, {
      object: 'list',
      model: parsed.model,
      data: (inputs as string[]).map((input, index) => ({
        object: 'embedding',
        index,
        embedding: embed(input, dimensions),
      })),
      usage: { prompt_tokens: 0, total_tokens: 0 },
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  const state: EmbeddingsServer = {
    url: `http://127.0.0.1:${port}/v1`,
    requests: [],
    inputCount: () => state.requests.reduce((sum, record) => sum + record.inputs.length, 0),
    failNext(count, status = 503) {
      failures = { count, status };
    },
    refuseInputsContaining: null,
    down: false,
    delayMs: 0,
    embed,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  return state;
}
