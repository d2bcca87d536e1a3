import { call } from '@ctxbus/test-kit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { useInProcessHub } from './in-process-serve.ts';

const hub = useInProcessHub({
  tokens: { token: ['acme', 'claude-code'] },
  afterStop: (stopped) => expect(stopped.stderr()).not.toMatch(/unhandled error/),
});

// Values that look like items but are wrong in every way a client can be wrong.
const itemLike = fc.record(
  {
    id: fc.oneof(fc.uuid(), fc.string(), fc.integer()),
    type: fc.oneof(
      fc.constantFrom('discovery', 'decision', 'status', 'request', 'alert'),
      fc.string(),
    ),
    title: fc.oneof(fc.string({ unit: 'grapheme' }), fc.integer(), fc.constant(null)),
    content: fc.oneof(fc.string({ unit: 'binary', maxLength: 500 }), fc.object()),
    relevanceTags: fc.oneof(fc.array(fc.string()), fc.string()),
    urgency: fc.string(),
    scopeKey: fc.oneof(fc.constantFrom('task:1', 'thread:x', 'user:', 'bad'), fc.string()),
    expiresAt: fc.oneof(
      fc.date({ noInvalidDate: true }).map((date) => date.toISOString()),
      fc.string(),
    ),
    expiresAfterSeconds: fc.oneof(fc.integer(), fc.double()),
    supersedes: fc.oneof(fc.uuid(), fc.string()),
    key: fc.string(),
    runtimeOptions: fc.oneof(fc.object(), fc.dictionary(fc.string(), fc.jsonValue())),
  },
  { requiredKeys: [] },
);

const body = fc.oneof(
  fc.jsonValue(),
  itemLike,
  fc.array(itemLike, { maxLength: 5 }),
  fc.record({ items: fc.array(itemLike, { maxLength: 5 }) }),
);
const queryString = fc
  .array(
    fc.tuple(
      fc.constantFrom(
        'scope',
        'type',
        'tags',
        'limit',
        'since',
        'before',
        'minUrgency',
        'runtime',
        'key',
        'keyPrefix',
        'tokenBudget',
        'unconsumed',
        'x',
      ),
      fc.string(),
    ),
    { maxLength: 4 },
  )
  .map((pairs) => new URLSearchParams(pairs).toString());

describe('fuzzing the real hub', () => {
  it('answers every malformed request with a 4xx JSON error and keeps its data', async () => {
    const seed = await call(hub.url, 'POST', '/api/context', {
      token: hub.tokens.token,
      body: { type: 'decision', title: 'must survive' },
    });
    const stored = seed.body.items[0];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(
          'POST /api/context',
          'POST /api/context/search',
          'GET /api/context',
          'GET /api/context/shared',
          'GET /api/stream',
          'POST /api/admin/tokens',
        ),
        body,
        queryString,
        async (route, json, query) => {
          const [method = 'GET', path = '/'] = route.split(' ');
          if (path === '/api/stream') {
            // A valid filter opens a stream: look at the status only, then hang up.
            const controller = new AbortController();
            const streamed = await fetch(`${hub.url}${path}?${query}`, {
              headers: { authorization: `Bearer ${hub.tokens.token}` },
              signal: controller.signal,
            });
            controller.abort();
            expect(streamed.status === 200 || streamed.status === 400, `stream ?${query}`).toBe(
              true,
            );
            return;
          }
          const response = await call(hub.url, method, `${path}?${query}`, {
            token: path.includes('admin') ? hub.adminToken : hub.tokens.token,
            ...(method === 'POST' ? { body: json } : {}),
          });
          expect(response.status, `${route}?${query} ${JSON.stringify(json)}`).toBeLessThan(500);
          if (response.status >= 400) {
            expect(typeof response.body?.error?.code).toBe('string');
            expect(typeof response.body?.error?.message).toBe('string');
          }
        },
      ),
      { numRuns: 300 },
    );
    const after = await call(hub.url, 'GET', `/api/context/${stored.id}`, {
      token: hub.tokens.token,
    });
    expect(after.body.item).toEqual(stored);
    expect((await call(hub.url, 'GET', '/health')).status).toBe(200);
  });
});
