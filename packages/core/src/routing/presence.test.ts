import { describe, expect, it } from 'vitest';
import { presenceAnnounceRequestSchema, summarizePresence } from './presence.js';

describe('summarizePresence', () => {
  it('counts workers and sums capacity per runtime; adapters make a runtime online', () => {
    expect(
      summarizePresence([
        { runtime: 'claude-code', kind: 'worker', capacity: 2 },
        { runtime: 'claude-code', kind: 'worker', capacity: 1 },
        { runtime: 'claude-code', kind: 'adapter', capacity: 0 },
        { runtime: 'openclaw', kind: 'adapter', capacity: 0 },
      ]),
    ).toEqual({
      'claude-code': { online: true, workers: 2, capacity: 3 },
      openclaw: { online: true, workers: 0, capacity: 0 },
    });
    expect(summarizePresence([])).toEqual({});
  });
});

describe('presenceAnnounceRequestSchema', () => {
  it('defaults the time to live to 30 s and bounds it', () => {
    expect(
      presenceAnnounceRequestSchema.parse({ instanceId: 'a', kind: 'worker' }).ttlSeconds,
    ).toBe(30);
    expect(
      presenceAnnounceRequestSchema.safeParse({ instanceId: 'a', kind: 'worker', ttlSeconds: 601 })
        .success,
    ).toBe(false);
  });
});
