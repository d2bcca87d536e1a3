import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

// A local stand-in for the OpenAI Chat Completions API: it speaks the real wire format
// (streaming `chat.completion.chunk` SSE ending with `data: [DONE]`, or one JSON completion) so
// the real OpenClaw CLI can run against it through an `openai-completions` provider, and it
// records every request so tests can see exactly what OpenClaw sent to "the model".

export interface ChatMessage {
  role: string;
  content?: unknown;
  tool_calls?: { id: string; type: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
  name?: string;
}

export interface ChatCompletionsRequest {
  model?: string;
  messages: ChatMessage[];
  tools?: { type: string; function: { name: string; description?: string } }[];
  stream?: boolean;
}

export type ScriptedOpenAiReply =
  | { text: string }
  | { toolCall: { name: string; arguments: Record<string, unknown> }; text?: string };

export interface ScriptedOpenAiModel {
  /** The base URL OpenClaw's provider needs (`.../v1`). */
  baseUrl: string;
  /** Every POST /v1/chat/completions body, in order. */
  requests: ChatCompletionsRequest[];
  /** Every request line (`GET /v1/models`, ...), in order, for finding out what a client asks. */
  hits: string[];
  close(): Promise<void>;
}

/** The text of a message's content, whether a string or an array of parts. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part: { text?: unknown }) => (typeof part?.text === 'string' ? part.text : ''))
      .join('');
  }
  return content == null ? '' : JSON.stringify(content);
}

/** All text of a request (every message, system included), for assertions. */
export function requestText(request: ChatCompletionsRequest): string {
  return request.messages.map((message) => contentText(message.content)).join('\n');
}

/** The text of the request's messages with one role (`system`, `user`, ...), joined. */
export function roleText(request: ChatCompletionsRequest, role: string): string {
  return request.messages
    .filter((message) => message.role === role)
    .map((message) => contentText(message.content))
    .join('\n');
}

/** The tool results OpenClaw sent back (the `role: "tool"` messages), as text. */
export function toolResults(request: ChatCompletionsRequest): string[] {
  return request.messages
    .filter((message) => message.role === 'tool')
    .map((message) => contentText(message.content));
}

/** The names of the tools a request offered the model. */
export function toolNames(request: ChatCompletionsRequest): string[] {
  return (request.tools ?? []).map((tool) => tool.function.name);
}

let counter = 0;

function chunk(id: string, model: string, delta: unknown, finishReason: string | null): string {
  const data = {
    id,
    object: 'chat.completion.chunk',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  };
  return `data: ${JSON.stringify(data)}\n\n`;
}

function streamReply(reply: ScriptedOpenAiReply, model: string): string {
  counter += 1;
  const id = `chatcmpl-scripted-${counter}`;
  const events = [chunk(id, model, { role: 'assistant', content: '' }, null)];
  if (reply.text) events.push(chunk(id, model, { content: reply.text }, null));
  if ('toolCall' in reply) {
    const call = { index: 0, id: `call_scripted_${counter}`, type: 'function' };
    const args = JSON.stringify(reply.toolCall.arguments);
    const half = Math.floor(args.length / 2);
    // Name first, the arguments in two pieces, as real servers stream them.
    events.push(
      chunk(
        id,
        model,
        { tool_calls: [{ ...call, function: { name: reply.toolCall.name, arguments: '' } }] },
        null,
      ),
      chunk(
        id,
        model,
        { tool_calls: [{ index: 0, function: { arguments: args.slice(0, half) } }] },
        null,
      ),
      chunk(
        id,
        model,
        { tool_calls: [{ index: 0, function: { arguments: args.slice(half) } }] },
        null,
      ),
    );
  }
  const usage = {
    id,
    object: 'chat.completion.chunk',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [],
    usage: { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 },
  };
  events.push(
    chunk(id, model, {}, 'toolCall' in reply ? 'tool_calls' : 'stop'),
    `data: ${JSON.stringify(usage)}\n\n`,
    'data: [DONE]\n\n',
  );
  return events.join('');
}

function jsonReply(reply: ScriptedOpenAiReply, model: string) {
  counter += 1;
  const message: Record<string, unknown> = { role: 'assistant', content: reply.text ?? null };
  if ('toolCall' in reply) {
    message.tool_calls = [
      {
        id: `call_scripted_${counter}`,
        type: 'function',
        function: {
          name: reply.toolCall.name,
          arguments: JSON.stringify(reply.toolCall.arguments),
        },
      },
    ];
  }
  return {
    id: `chatcmpl-scripted-${counter}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, message, finish_reason: 'toolCall' in reply ? 'tool_calls' : 'stop' }],
    usage: { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 },
  };
}

/**
 * Starts the scripted model on a free loopback port. `respond` sees each chat request (and how
 * many came before) and returns the reply: plain text, or a tool call (with optional text).
 * `modelIds` is what GET /v1/models lists.
 */
export async function startScriptedOpenAiModel(
  respond: (request: ChatCompletionsRequest, index: number) => ScriptedOpenAiReply,
  modelIds: string[] = ['fake-model'],
): Promise<ScriptedOpenAiModel> {
  const requests: ChatCompletionsRequest[] = [];
  const hits: string[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (part: Buffer) => {
      body += part.toString();
    });
    req.on('end', () => {
      const path = (req.url ?? '').split('?')[0] ?? '';
      hits.push(`${req.method} ${path}`);
      if (req.method === 'GET' && path.endsWith('/models')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            object: 'list',
            data: modelIds.map((id) => ({ id, object: 'model', created: 0, owned_by: 'ctxbus' })),
          }),
        );
        return;
      }
      if (req.method === 'POST' && path.endsWith('/chat/completions')) {
        const request = JSON.parse(body) as ChatCompletionsRequest;
        requests.push(request);
        const reply = respond(request, requests.length - 1);
        const model = request.model ?? 'fake-model';
        if (request.stream) {
          res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
          res.end(streamReply(reply, model));
        } else {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify(jsonReply(reply, model)));
        }
        return;
      }
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          error: { type: 'invalid_request_error', message: `no ${req.method} ${path}` },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    hits,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
