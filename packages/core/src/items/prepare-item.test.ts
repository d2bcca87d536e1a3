import { describe, expect, it } from 'vitest';
import { contextItemInputSchema } from './context-item.js';
import { deriveSummary, prepareItem } from './prepare-item.js';

const writer = { teamId: 'acme', runtime: 'openclaw' };
const now = new Date('2026-11-21T10:00:00.000Z');

describe('contextItemInputSchema', () => {
  it('accepts a minimal item', () => {
    expect(
      contextItemInputSchema.safeParse({ type: 'decision', title: 'Use SQLite' }).success,
    ).toBe(true);
  });

  it.each([
    [{ type: 'idea', title: 'x' }, 'type'],
    [{ type: 'status', title: '  ' }, 'title'],
    [{ type: 'status', title: 'x', urgency: 'urgent' }, 'urgency'],
    [{ type: 'status', title: 'x', relevanceTags: ['has space'] }, 'relevanceTags'],
    [{ type: 'status', title: 'x', scopeKey: 'project:1' }, 'scopeKey'],
    [{ type: 'status', title: 'x', scope: 'global', scopeKey: 'task:1' }, 'scopeKey'],
    [
      { type: 'status', title: 'x', expiresAt: '2027-01-01T00:00:00Z', expiresAfterSeconds: 5 },
      'expiresAfterSeconds',
    ],
    [{ type: 'status', title: 'x', id: 'not-a-uuid' }, 'id'],
    [{ type: 'status', title: 'x', sourceRuntime: 'Not A Runtime' }, 'sourceRuntime'],
    [
      { type: 'status', title: 'x', sourceTaskId: 'T-1', source: { taskId: 'T-2' } },
      'sourceTaskId',
    ],
    [{ type: 'status', title: 'x', key: '/leading/slash' }, 'key'],
    [{ type: 'status', title: 'nul\u0000' }, 'title'],
    [{ type: 'status', title: 'x', content: 'a\u0000b' }, 'content'],
    [{ type: 'status', title: 'x', relevanceTags: ['t\u0000'] }, 'relevanceTags'],
    [{ type: 'status', title: 'x', source: { taskId: 'T\u0000' } }, 'source'],
    [{ type: 'status', title: 'x', runtimeOptions: { web: { a: ['\u0000'] } } }, 'runtimeOptions'],
  ])('rejects %j naming %s', (input, field) => {
    const result = contextItemInputSchema.safeParse(input);
    expect(result.success).toBe(false);
    if (!result.success && field) expect(result.error.issues[0]?.path[0]).toBe(field);
  });
});

it('names NUL characters as the problem, and accepts the text "\\u0000"', () => {
  const result = contextItemInputSchema.safeParse({ type: 'status', title: 'a\u0000' });
  expect(result.success).toBe(false);
  if (!result.success) expect(result.error.issues[0]?.message).toMatch(/NUL characters/);
  const escaped = { type: 'status', title: 'x', content: 'write \\u0000 in JSON' };
  expect(contextItemInputSchema.safeParse(escaped).success).toBe(true);
});

it('refuses runtimeOptions nested deeper than 32 levels as an issue, never a stack overflow', () => {
  const nested = (depth: number): unknown => {
    let value: unknown = 1;
    for (let level = 0; level < depth; level++) value = { a: value };
    return value;
  };
  const deep = contextItemInputSchema.safeParse({
    type: 'status',
    title: 'x',
    runtimeOptions: { web: nested(10_000) },
  });
  expect(deep.success).toBe(false);
  expect(deep.error?.issues[0]).toMatchObject({
    path: ['runtimeOptions'],
    message: expect.stringMatching(/^web(\.a){31}: nested deeper than 32 levels$/),
  });
  expect(() =>
    prepareItem({ type: 'status', title: 'x', runtimeOptions: { web: nested(10_000) } }, writer, {
      now,
    }),
  ).toThrow(/nested deeper than 32 levels/);
  // runtimeOptions itself is the first level: 31 below its runtime's name are fine.
  const edge = { type: 'status', title: 'x', runtimeOptions: { web: nested(31) } };
  expect(contextItemInputSchema.safeParse(edge).success).toBe(true);
  const over = { type: 'status', title: 'x', runtimeOptions: { web: nested(32) } };
  expect(contextItemInputSchema.safeParse(over).success).toBe(false);
});

describe('prepareItem', () => {
  it.each([
    [{ key: 'creds/sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789' }, 'key'],
    [{ relevanceTags: ['ok', 'ghp_abcdefghijklmnopqrstuvwxyz0123456789AB'] }, 'relevanceTags[1]'],
    [{ scopeKey: 'thread:ghp_abcdefghijklmnopqrstuvwxyz0123456789AB' }, 'scopeKey'],
    [{ sourceAgentId: 'sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789' }, 'sourceAgentId'],
    [{ sourceThreadId: 'xoxb-123456789012-abcdefghijkl' }, 'sourceThreadId'],
    [{ sourceTaskId: 'AKIAIOSFODNN7EXAMPLE' }, 'sourceTaskId'],
  ])('refuses a secret in an identifier: %o (%s), before anything is stored', (fields, field) => {
    expect(() => prepareItem({ type: 'status', title: 'x', ...fields }, writer, { now })).toThrow(
      expect.objectContaining({
        code: 'validation_failed',
        details: expect.objectContaining({ field, reason: 'secret_in_identifier' }),
      }),
    );
  });

  it('applies defaults and takes the runtime from the writer', () => {
    const item = prepareItem({ type: 'discovery', title: 'Tests are flaky' }, writer, { now });
    expect(item).toMatchObject({
      teamId: 'acme',
      source: { runtime: 'openclaw', agentId: null, taskId: null, threadId: null },
      scope: 'global',
      scopeKey: null,
      urgency: 'background',
      visibility: 'team',
      summary: 'Tests are flaky',
      createdAt: '2026-11-21T10:00:00.000Z',
      expiresAt: null,
      relevanceTags: [],
    });
    expect(item.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(item.tokens).toBeGreaterThan(0);
  });

  it('derives the scope key from the source task or thread', () => {
    const task = prepareItem(
      { type: 'status', title: 'x', scope: 'task', source: { taskId: 'T-1' } },
      writer,
      { now },
    );
    expect(task.scopeKey).toBe('task:T-1');
    const thread = prepareItem({ type: 'status', title: 'x', scopeKey: 'thread:9' }, writer, {
      now,
    });
    expect(thread.scope).toBe('thread');
  });

  it('refuses a tag with a character nobody sees, once, and keeps emoji and other scripts', () => {
    const tags = (relevanceTags: string[]) =>
      contextItemInputSchema.safeParse({ type: 'status', title: 'x', relevanceTags });
    for (const hidden of [
      '\u200b',
      '\u200d',
      '\u202e',
      '\u2066',
      '\ufeff',
      '\u00ad',
      '\u001b',
      '\u0085',
    ]) {
      const parsed = tags(['ok', `dep${hidden}loy`]);
      expect(parsed.success, JSON.stringify(hidden)).toBe(false);
      expect(parsed.error?.issues.map((issue) => [issue.path, issue.message])).toEqual([
        [['relevanceTags', 1], expect.stringMatching(/^a tag has no (invisible|spaces)/)],
      ]);
    }
    // NUL and whitespace keep their own message, alone.
    expect(tags(['a\u0000b']).error?.issues).toHaveLength(1);
    expect(tags(['a\tb']).error?.issues.map((issue) => issue.message)).toEqual([
      'a tag has no spaces or commas',
    ]);
    // A joiner inside an emoji sequence is part of the emoji.
    for (const visible of [
      '👩\u200d💻',
      '🏳️\u200d🌈',
      '👨🏽\u200d🔧',
      'café',
      '日本語',
      'نشر',
      'v1.2-rc',
    ]) {
      expect(tags([visible]).success, visible).toBe(true);
    }
  });

  it('turns a TTL into expiresAt and lowercases tags without duplicates', () => {
    const item = prepareItem(
      { type: 'alert', title: 'x', expiresAfterSeconds: 60, relevanceTags: ['CI', 'ci', 'build'] },
      writer,
      { now },
    );
    expect(item.expiresAt).toBe('2026-11-21T10:01:00.000Z');
    expect(item.relevanceTags).toEqual(['ci', 'build']);
  });

  it("takes seed 000's ttl as expiresAfterSeconds; the two disagreeing is an error", () => {
    const input = { id: '0192f000-0000-7000-8000-000000000002', type: 'status', title: 'x' };
    const byTtl = prepareItem({ ...input, ttl: 3600 }, writer, { now });
    const bySeconds = prepareItem({ ...input, expiresAfterSeconds: 3600 }, writer, { now });
    expect(byTtl.expiresAt).toBe('2026-11-21T11:00:00.000Z');
    expect(byTtl.inputHash).toBe(bySeconds.inputHash);
    const both = { ...input, ttl: 3600, expiresAfterSeconds: 3600 };
    expect(prepareItem(both, writer, { now }).expiresAt).toBe(byTtl.expiresAt);
    const disagreeing = contextItemInputSchema.safeParse({ ...both, expiresAfterSeconds: 60 });
    expect(disagreeing.error?.issues).toEqual([
      expect.objectContaining({
        path: ['ttl'],
        message: expect.stringMatching(/ttl 3600 disagrees with expiresAfterSeconds 60/),
      }),
    ]);
    const withDate = { ...input, ttl: 60, expiresAt: '2027-01-01T00:00:00Z' };
    expect(contextItemInputSchema.safeParse(withDate).error?.issues[0]?.path).toEqual(['ttl']);
  });

  it('redacts secrets before anything else sees them, and notes what it redacted', () => {
    const item = prepareItem(
      {
        type: 'discovery',
        title: 'Deploy key',
        content: 'The key is sk-ant-api03-0123456789abcdefghijklmnop, keep it safe.',
      },
      writer,
      { now },
    );
    expect(item.content).toBe('The key is [REDACTED:anthropic-api-key], keep it safe.');
    expect(item.summary).not.toContain('sk-ant');
    expect(item.redactions).toEqual([{ field: 'content', kind: 'anthropic-api-key', count: 1 }]);
  });

  it('gives the same input hash for a retry at a later time, another for other content', () => {
    const input = {
      id: '0192f000-0000-7000-8000-000000000001',
      type: 'status',
      title: 'x',
      expiresAfterSeconds: 30,
    };
    const first = prepareItem(input, writer, { now });
    const retry = prepareItem(input, writer, { now: new Date(now.getTime() + 60_000) });
    const changed = prepareItem({ ...input, title: 'y' }, writer, { now });
    expect(retry.inputHash).toBe(first.inputHash);
    expect(changed.inputHash).not.toBe(first.inputHash);
  });
});

describe('deriveSummary', () => {
  it('takes the first sentence or line, capped', () => {
    expect(deriveSummary('T', 'We chose SQLite because it is embedded. More text.')).toBe(
      'We chose SQLite because it is embedded.',
    );
    expect(deriveSummary('T', 'line one\nline two')).toBe('line one');
    expect(deriveSummary('Title', '')).toBe('Title');
    const long = deriveSummary('T', 'word '.repeat(100));
    expect(long.length).toBeLessThanOrEqual(200);
    expect(long.endsWith('…')).toBe(true);
  });
});
