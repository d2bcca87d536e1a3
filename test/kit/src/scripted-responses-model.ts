import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

// A local stand-in for the OpenAI Responses API (`POST /v1/responses`), the API the Codex CLI
// calls: it answers in the real wire format (server-sent events `response.created`,
// `response.output_item.done` with a message or a function call, `response.completed` with the
// usage) so the real `codex exec` can run against it through a custom model provider, and it
// records every request so tests can see exactly what Codex sent to "the model".

/** One item of a Responses request's `input` (a message, a function call or its output). */
export interface ResponsesInputItem {
  type?: string;
  role?: string;
  content?: unknown;
  name?: string;
  call_id?: string;
  arguments?: string;
  output?: unknown;
}

/** A tool offered to the model: a function, or a namespace of them (Codex's MCP servers). */
export interface ResponsesTool {
  type: string;
  name?: string;
  description?: string;
  tools?: ResponsesTool[];
}

export interface ResponsesRequest {
  model?: string;
  instructions?: string;
  input: ResponsesInputItem[];
  tools?: ResponsesTool[];
  stream?: boolean;
}

export type ScriptedResponsesReply =
  | { text: string }
  | {
      functionCall: { name: string; namespace?: string; arguments: Record<string, unknown> };
    };

export interface ScriptedResponsesModel {
  /** The base URL Codex's `model_providers.<id>.base_url` needs (`.../v1`). */
  baseUrl: string;
  /** Every POST /v1/responses body, in order. */
  requests: ResponsesRequest[];
  /** Every request line (`POST /v1/responses`, `GET /v1/models`, ...), in order. */
  hits: string[];
  close(): Promise<void>;
}

/** The text of a content value: a string, or an array of parts with `text`. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part: { text?: unknown }) => (typeof part?.text === 'string' ? part.text : ''))
      .join('');
  }
  return content == null ? '' : JSON.stringify(content);
}

/** All text of a request: its instructions and every input item's content or output. */
export function requestText(request: ResponsesRequest): string {
  return [
    request.instructions ?? '',
    ...request.input.map((item) => contentText(item.content ?? item.output ?? '')),
  ].join('\n');
}

/** The text of the request's messages with one role (`user`, `developer`, ...), joined. */
export function roleText(request: ResponsesRequest, role: string): string {
  return request.input
    .filter((item) => (item.type ?? 'message') === 'message' && item.role === role)
    .map((item) => contentText(item.content))
    .join('\n');
}

/** The outputs Codex sent back for function calls (`function_call_output` items), as text. */
export function functionOutputs(request: ResponsesRequest): string[] {
  return request.input
    .filter((item) => item.type === 'function_call_output')
    .map((item) => contentText(item.output));
}

/**
 * The names of the tools a request offered the model; a namespace's tools (Codex puts each MCP
 * server's tools in one, `mcp__<server>`) as `<namespace>/<tool>`.
 */
export function toolNames(request: ResponsesRequest): string[] {
  return (request.tools ?? []).flatMap((tool) =>
    tool.type === 'namespace'
      ? (tool.tools ?? []).map((inner) => `${tool.name}/${inner.name ?? inner.type}`)
      : [tool.name ?? tool.type],
  );
}

let counter = 0;

const sse = (data: Record<string, unknown>) =>
  `event: ${String(data.type)}\ndata: ${JSON.stringify(data)}\n\n`;

function outputItem(reply: ScriptedResponsesReply, id: number): Record<string, unknown> {
  if ('functionCall' in reply) {
    return {
      type: 'function_call',
      id: `fc_scripted_${id}`,
      call_id: `call_scripted_${id}`,
      name: reply.functionCall.name,
      ...(reply.functionCall.namespace && { namespace: reply.functionCall.namespace }),
      arguments: JSON.stringify(reply.functionCall.arguments),
    };
  }
  return {
    type: 'message',
    id: `msg_scripted_${id}`,
    role: 'assistant',
    status: 'completed',
    content: [{ type: 'output_text', text: reply.text, annotations: [] }],
  };
}

function streamReply(reply: ScriptedResponsesReply, model: string): string {
  counter += 1;
  const id = `resp_scripted_${counter}`;
  const item = outputItem(reply, counter);
  const events = [
    sse({ type: 'response.created', response: { id, object: 'response', model, output: [] } }),
    sse({ type: 'response.output_item.added', output_index: 0, item }),
  ];
  if ('text' in reply) {
    events.push(
      sse({
        type: 'response.output_text.delta',
        item_id: item.id,
        output_index: 0,
        content_index: 0,
        delta: reply.text,
      }),
    );
  }
  events.push(
    sse({ type: 'response.output_item.done', output_index: 0, item }),
    sse({
      type: 'response.completed',
      response: {
        id,
        object: 'response',
        model,
        status: 'completed',
        output: [item],
        usage: {
          input_tokens: 100,
          input_tokens_details: { cached_tokens: 0 },
          output_tokens: 20,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: 120,
        },
      },
    }),
  );
  return events.join('');
}

/**
 * Starts the scripted model on a free loopback port. `respond` sees each Responses request (and
 * how many came before) and returns the reply: a message's text, or a function call.
 */
export async function startScriptedResponsesModel(
  respond: (request: ResponsesRequest, index: number) => ScriptedResponsesReply,
  modelIds: string[] = ['fake-model'],
): Promise<ScriptedResponsesModel> {
  const requests: ResponsesRequest[] = [];
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
      if (req.method === 'POST' && path.endsWith('/responses')) {
        const request = JSON.parse(body) as ResponsesRequest;
        requests.push(request);
        const reply = respond(request, requests.length - 1);
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        res.end(streamReply(reply, request.model ?? 'fake-model'));
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
