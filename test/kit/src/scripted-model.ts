import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

// A local stand-in for the Anthropic Messages API: it speaks the real wire format (streaming
// SSE events or a JSON message) so the real Claude Code CLI can run against it, and it records
// every request so tests can see exactly what Claude Code sent to "the model".

export interface MessagesRequest {
  model?: string;
  system?: unknown;
  messages: { role: string; content: unknown }[];
  tools?: { name: string }[];
  stream?: boolean;
}

export type ScriptedReply =
  | { text: string }
  | { toolUse: { name: string; input: Record<string, unknown> }; text?: string };

export interface ScriptedModel {
  url: string;
  /** Every POST /v1/messages body, in order. */
  requests: MessagesRequest[];
  close(): Promise<void>;
}

/** All text of a request (system prompt and messages), for assertions. */
export function requestText(request: MessagesRequest): string {
  return JSON.stringify([request.system, request.messages]);
}

/** The tool results Claude Code sent back in a request's last user message. */
export function toolResults(request: MessagesRequest): string[] {
  const last = request.messages.at(-1);
  if (!last || !Array.isArray(last.content)) return [];
  return (last.content as { type: string; content?: unknown }[])
    .filter((block) => block.type === 'tool_result')
    .map((block) => JSON.stringify(block.content));
}

let counter = 0;

function sse(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

function streamReply(reply: ScriptedReply, model: string): string {
  counter += 1;
  const id = `msg_scripted_${counter}`;
  const events = [
    sse('message_start', {
      type: 'message_start',
      message: {
        id,
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 100, output_tokens: 1 },
      },
    }),
  ];
  let index = 0;
  const text = 'text' in reply ? reply.text : undefined;
  if (text) {
    events.push(
      sse('content_block_start', {
        type: 'content_block_start',
        index,
        content_block: { type: 'text', text: '' },
      }),
      sse('content_block_delta', {
        type: 'content_block_delta',
        index,
        delta: { type: 'text_delta', text },
      }),
      sse('content_block_stop', { type: 'content_block_stop', index }),
    );
    index += 1;
  }
  if ('toolUse' in reply) {
    events.push(
      sse('content_block_start', {
        type: 'content_block_start',
        index,
        content_block: {
          type: 'tool_use',
          id: `toolu_scripted_${counter}`,
          name: reply.toolUse.name,
          input: {},
        },
      }),
      sse('content_block_delta', {
        type: 'content_block_delta',
        index,
        delta: { type: 'input_json_delta', partial_json: JSON.stringify(reply.toolUse.input) },
      }),
      sse('content_block_stop', { type: 'content_block_stop', index }),
    );
  }
  events.push(
    sse('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: 'toolUse' in reply ? 'tool_use' : 'end_turn', stop_sequence: null },
      usage: { output_tokens: 20 },
    }),
    sse('message_stop', { type: 'message_stop' }),
  );
  return events.join('');
}

function jsonReply(reply: ScriptedReply, model: string) {
  counter += 1;
  const content: unknown[] = [];
  if ('text' in reply && reply.text) content.push({ type: 'text', text: reply.text });
  if ('toolUse' in reply) {
    content.push({
      type: 'tool_use',
      id: `toolu_scripted_${counter}`,
      name: reply.toolUse.name,
      input: reply.toolUse.input,
    });
  }
  return {
    id: `msg_scripted_${counter}`,
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: 'toolUse' in reply ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 100, output_tokens: 20 },
  };
}

/**
 * Starts the scripted model on a free loopback port. `respond` sees each request (and how many
 * came before) and returns the reply: plain text, or a tool call.
 */
export async function startScriptedModel(
  respond: (request: MessagesRequest, index: number) => ScriptedReply,
): Promise<ScriptedModel> {
  const requests: MessagesRequest[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    req.on('end', () => {
      const path = (req.url ?? '').split('?')[0] ?? '';
      if (req.method === 'POST' && path.endsWith('/messages/count_tokens')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ input_tokens: Math.ceil(body.length / 4) }));
        return;
      }
      if (req.method === 'POST' && path.endsWith('/messages')) {
        const request = JSON.parse(body) as MessagesRequest;
        requests.push(request);
        const reply = respond(request, requests.length - 1);
        const model = request.model ?? 'scripted-model';
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
          type: 'error',
          error: { type: 'not_found_error', message: `no ${req.method} ${path}` },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
