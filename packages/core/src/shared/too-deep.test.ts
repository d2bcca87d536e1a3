import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, tooDeep } from './validation.js';

// tooDeep runs before every schema check: the first place a value nests deeper than the limit,
// with its path, or null.

/** `depth` objects (or arrays) nested in one another, with a leaf at the bottom. */
function nested(depth: number, inArrays = false): unknown {
  let value: unknown = 'leaf';
  for (let level = 0; level < depth; level++) value = inArrays ? [value] : { a: value };
  return value;
}

/** The rule spelled out recursively, for small values: the reference the walk must match. */
function reference(value: unknown, limit: number, depth = 0, path = ''): string | null {
  if (value === null || typeof value !== 'object') return null;
  if (depth >= limit) return path || '(root)';
  const entries = Object.entries(value);
  // The walk pops its stack: the last field first.
  for (let index = entries.length - 1; index >= 0; index--) {
    const [key, child] = entries[index] as [string, unknown];
    const step = Array.isArray(value) ? `[${key}]` : `.${key}`;
    const found = reference(child, limit, depth + 1, path + step);
    if (found !== null) return found;
  }
  return null;
}

/** A random JSON value of objects, arrays and leaves (a fixed seed: the same every run). */
function randomValue(seed: number): unknown {
  let state = seed;
  const next = () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state / 2 ** 31;
  };
  const build = (depth: number): unknown => {
    const pick = next();
    if (depth > 9 || pick < 0.3) return pick < 0.1 ? null : Math.round(pick * 100);
    const size = Math.floor(next() * 4);
    const children = Array.from({ length: size }, () => build(depth + 1));
    if (pick < 0.6) return children;
    return Object.fromEntries(children.map((child, index) => [`k${index}`, child]));
  };
  return build(0);
}

describe('tooDeep', () => {
  it('passes leaves and values up to the limit, and names the first level past it', () => {
    for (const leaf of [null, 1, 'text', true, undefined]) expect(tooDeep(leaf)).toBeNull();
    expect(tooDeep(nested(MAX_JSON_DEPTH))).toBeNull();
    expect(tooDeep(nested(MAX_JSON_DEPTH + 1))).toBe('.a'.repeat(MAX_JSON_DEPTH));
    expect(tooDeep(nested(MAX_JSON_DEPTH + 1, true))).toBe('[0]'.repeat(MAX_JSON_DEPTH));
    expect(tooDeep({ a: [{ b: { c: 1 } }] }, 3)).toBe('.a[0].b');
    expect(tooDeep({}, 0)).toBe('(root)');
    // A value nested far deeper than any stack allows is an answer, not a crash.
    expect(tooDeep(nested(200_000))).toBe('.a'.repeat(MAX_JSON_DEPTH));
  });

  it('finds what the recursive rule finds, on random values and limits', () => {
    for (let seed = 1; seed <= 400; seed++) {
      const value = randomValue(seed);
      const limit = 1 + (seed % 8);
      expect(tooDeep(value, limit), `seed ${seed}, limit ${limit}`).toBe(reference(value, limit));
    }
  });
});
