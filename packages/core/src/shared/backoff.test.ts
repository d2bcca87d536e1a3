import { describe, expect, it } from 'vitest';
import { backoffDelay, createBackoff } from './backoff.js';

describe('backoffDelay', () => {
  it('doubles from the first wait up to the longest', () => {
    const waits = [0, 1, 2, 3, 4, 5, 60, 5000].map((attempt) =>
      backoffDelay(attempt, { initialMs: 250, maxMs: 5_000 }),
    );
    expect(waits).toEqual([250, 500, 1_000, 2_000, 4_000, 5_000, 5_000, 5_000]);
  });

  it('takes a random share of the wait off with jitter', () => {
    const options = { initialMs: 1_000, maxMs: 60_000, jitter: 0.5 };
    expect(backoffDelay(0, options, () => 0)).toBe(500);
    expect(backoffDelay(0, options, () => 1)).toBe(1_000);
    expect(backoffDelay(2, options, () => 0.5)).toBe(3_000);
  });
});

describe('createBackoff', () => {
  it('counts retries and starts over on reset', () => {
    const backoff = createBackoff({ initialMs: 100, maxMs: 300 });
    expect([backoff.next(), backoff.next(), backoff.next()]).toEqual([100, 200, 300]);
    expect(backoff.attempts).toBe(3);
    backoff.reset();
    expect(backoff.next()).toBe(100);
  });
});
