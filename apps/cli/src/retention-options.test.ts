import { describe, expect, it } from 'vitest';
import { parseDuration, parseRetention } from './retention-options.js';

describe('retention options', () => {
  it('reads durations and per-type age limits', () => {
    expect(parseDuration('30d', '--x')).toBe(30 * 86_400_000);
    expect(parseDuration('15m', '--x')).toBe(900_000);
    expect(parseDuration('500ms', '--x')).toBe(500);
    expect(parseRetention('status=7d, decision=180d')).toEqual({
      status: 7 * 86_400_000,
      decision: 180 * 86_400_000,
    });
    expect(parseRetention('off')).toEqual({});
  });

  it('names what is wrong', () => {
    expect(() => parseDuration('7 days', '--sweep-interval')).toThrow(
      /--sweep-interval: "7 days" is not a duration/,
    );
    expect(() => parseRetention('memo=7d')).toThrow(/type one of discovery/);
    expect(() => parseRetention('status=soon')).toThrow(/--retain status: "soon"/);
  });
});
