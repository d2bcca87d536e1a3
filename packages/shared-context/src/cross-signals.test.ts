import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bootstrapSharedContext } from './bootstrap.js';
import { detectCrossSignals } from './cross-signals.js';
import { normaliseTerm } from './outputs.js';
import type { SharedContextPaths } from './paths.js';
import { sharedContextPaths } from './paths.js';
import { writeAgentOutput } from './writers.js';

const NOW = new Date('2026-02-04T18:00:00.000Z');
let base: string;
let paths: SharedContextPaths;

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'ctxbus-sc-signals-'));
  paths = sharedContextPaths({ dir: join(base, 'shared-context') });
  bootstrapSharedContext(paths);
  writeAgentOutput(paths, {
    agent: 'ceo-desk',
    title: 'Board prep',
    body: 'Entities:\n- Jane Doe\n- Roadmaps',
    now: new Date('2026-02-04T08:00:00Z'),
  });
  writeAgentOutput(paths, {
    agent: 'research',
    title: 'Org chart',
    body: 'Notes on the CEO of Acme.',
    entities: ['Acme CEO', 'roadmap'],
    now: new Date('2026-02-03T08:00:00Z'),
  });
  writeAgentOutput(paths, {
    agent: 'sales',
    title: 'Deal',
    body: 'Met the #CEO.',
    entities: ['Acme CEO'],
    now: new Date('2026-02-02T08:00:00Z'),
  });
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

/** A local server speaking OpenAI's /v1/chat/completions, answering what the test sets. */
interface ModelServer {
  url: string;
  requests: {
    path: string;
    body: { model: string; messages: { role: string; content: string }[] };
  }[];
  answer: (request: IncomingMessage, response: ServerResponse) => void;
}
let server: Server;
const model: ModelServer = { url: '', requests: [], answer: () => {} };
const held: ServerResponse[] = [];

beforeAll(async () => {
  server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on('end', () => {
      model.requests.push({ path: request.url ?? '', body: JSON.parse(body) });
      model.answer(request, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  model.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(async () => {
  for (const response of held) response.destroy();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});
beforeEach(() => {
  model.requests = [];
});

const chatAnswer = (content: string) => (_request: IncomingMessage, response: ServerResponse) => {
  response.writeHead(200, { 'content-type': 'application/json' });
  response.end(
    JSON.stringify({
      id: 'chatcmpl-1',
      object: 'chat.completion',
      model: 'local-test',
      choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content } }],
    }),
  );
};

describe('normaliseTerm', () => {
  it('folds case, punctuation, accents and a simple plural', () => {
    expect(normaliseTerm('ACME Corp.')).toBe('acme corp');
    expect(normaliseTerm('acme-corp')).toBe('acme corp');
    expect(normaliseTerm('Roadmaps')).toBe('roadmap');
    expect(normaliseTerm('Companies')).toBe('company');
    expect(normaliseTerm('Café Boxes')).toBe('cafe box');
    expect(normaliseTerm('business')).toBe('business');
    expect(normaliseTerm('status')).toBe('status');
  });
});

describe('detectCrossSignals', () => {
  it('finds overlap across agents within the window, deterministically', async () => {
    const first = await detectCrossSignals(paths, { now: NOW });
    expect(first.signals.map((signal) => [signal.key, signal.agents])).toEqual([
      ['acme ceo', ['research', 'sales']],
      ['roadmap', ['ceo-desk', 'research']],
    ]);
    expect(first.relPath).toBe('cross-signals/2026-02-04.json');
    const written = readFileSync(join(paths.root, 'cross-signals', '2026-02-04.json'), 'utf8');
    await detectCrossSignals(paths, { now: NOW });
    expect(readFileSync(join(paths.root, 'cross-signals', '2026-02-04.json'), 'utf8')).toBe(
      written,
    );

    const narrow = await detectCrossSignals(paths, { now: NOW, windowDays: 1, write: false });
    expect(narrow.signals).toEqual([]);
    expect(narrow.relPath).toBeNull();
    const three = await detectCrossSignals(paths, { now: NOW, minAgents: 3, write: false });
    expect(three.signals).toEqual([]);
  });

  it('lets the enhancer merge fuzzy duplicates over the OpenAI wire format', async () => {
    model.answer = chatAnswer(
      JSON.stringify({
        merges: [
          { into: 'acme ceo', from: ['jane doe', 'ceo', 'not-a-term'] },
          { into: 'acme ceo', from: ['jane doe'], reason: 'Jane Doe is the CEO of Acme' },
        ],
      }),
    );
    const report = await detectCrossSignals(paths, {
      now: NOW,
      write: false,
      llm: { baseUrl: model.url, model: 'local-test', apiKey: 'k', timeoutMs: 60_000 },
    });
    expect(model.requests).toHaveLength(1);
    expect(model.requests[0]?.path).toBe('/v1/chat/completions');
    expect(model.requests[0]?.body.model).toBe('local-test');
    const sent = JSON.parse(model.requests[0]?.body.messages[1]?.content ?? '{}') as {
      terms: string[];
    };
    expect(sent.terms).toEqual(['acme ceo', 'ceo', 'jane doe', 'roadmap']);
    // The first merge names an unknown term: refused whole. The second merges Jane Doe.
    expect(report.enhancer).toEqual({
      enabled: true,
      applied: true,
      model: 'local-test',
      merges: 1,
    });
    expect(report.warnings).toEqual([]);
    const acme = report.signals[0];
    expect(acme?.key).toBe('acme ceo');
    expect(acme?.agents).toEqual(['ceo-desk', 'research', 'sales']);
    expect(acme?.mergedFrom).toEqual(['jane doe']);
    expect(acme?.explanation).toBe('Jane Doe is the CEO of Acme');
  });

  it('keeps the deterministic result, with a warning, when the model times out', async () => {
    model.answer = (_request, response) => {
      held.push(response);
    };
    const plain = await detectCrossSignals(paths, { now: NOW, write: false });
    const report = await detectCrossSignals(paths, {
      now: NOW,
      write: false,
      llm: { baseUrl: model.url, model: 'slow', timeoutMs: 300 },
    });
    expect(model.requests).toHaveLength(1);
    expect(report.signals).toEqual(plain.signals);
    expect(report.enhancer).toEqual({ enabled: true, applied: false, model: 'slow' });
    expect(report.warnings).toEqual([
      `semantic enhancer failed, deterministic result kept: the model at ${model.url}/chat/completions did not answer within 300 ms`,
    ]);
  });

  it('keeps the deterministic result when the model errs or answers nonsense', async () => {
    const plain = await detectCrossSignals(paths, { now: NOW, write: false });
    model.answer = (_request, response) => {
      response.writeHead(500, { 'content-type': 'application/json' });
      response.end('{"error":{"message":"overloaded"}}');
    };
    const failed = await detectCrossSignals(paths, {
      now: NOW,
      write: false,
      llm: { baseUrl: model.url, model: 'm' },
    });
    expect(failed.signals).toEqual(plain.signals);
    expect(failed.warnings[0]).toMatch(/answered 500$/);
    model.answer = chatAnswer('I think they are all the same.');
    const nonsense = await detectCrossSignals(paths, {
      now: NOW,
      write: false,
      llm: { baseUrl: model.url, model: 'm' },
    });
    expect(nonsense.signals).toEqual(plain.signals);
    expect(nonsense.warnings[0]).toMatch(/did not answer with JSON$/);
    const unreachable = await detectCrossSignals(paths, {
      now: NOW,
      write: false,
      llm: { baseUrl: 'http://127.0.0.1:9/v1', model: 'm' },
    });
    expect(unreachable.signals).toEqual(plain.signals);
    expect(unreachable.warnings[0]).toMatch(/cannot reach the model/);
  });
});
