import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ageText,
  bundleCacheFile,
  bundleCacheKey,
  readCachedBundle,
  writeCachedBundle,
} from './bundle-cache.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ctxbus-bundle-cache-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('the bundle cache', () => {
  it('keys per runtime and token, without writing the token', () => {
    const key = bundleCacheKey('openclaw', 'ctxbus_secret_token');
    expect(key).toMatch(/^openclaw:[0-9a-f]{24}$/);
    expect(bundleCacheKey('claude-code', 'ctxbus_secret_token')).not.toBe(key);
    expect(bundleCacheKey('openclaw', 'ctxbus_other_token')).not.toBe(key);
    writeCachedBundle(dir, key, { text: 'the team bundle', savedAtMs: 1 });
    expect(readFileSync(bundleCacheFile(dir), 'utf8')).not.toContain('ctxbus_secret_token');
    expect(readCachedBundle(dir, key)).toEqual({ text: 'the team bundle', savedAtMs: 1 });
    expect(readCachedBundle(dir, bundleCacheKey('openclaw', 'ctxbus_other_token'))).toBeNull();
  });

  it('is bounded: past the byte cap the oldest entries go first', () => {
    const text = 'x'.repeat(1_000);
    for (let index = 0; index < 10; index += 1) {
      writeCachedBundle(dir, `rt:${index}`, { text, savedAtMs: index }, 3_500);
    }
    expect(statSync(bundleCacheFile(dir)).size).toBeLessThanOrEqual(3_500);
    const kept = Object.keys(JSON.parse(readFileSync(bundleCacheFile(dir), 'utf8')));
    expect(kept).toEqual(['rt:9', 'rt:8', 'rt:7']);
    // One bundle over the cap alone is not kept.
    writeCachedBundle(dir, 'rt:big', { text: 'y'.repeat(4_000), savedAtMs: 20 }, 3_500);
    expect(readCachedBundle(dir, 'rt:big')).toBeNull();
  });

  it('is private to the user (0600) and survives a damaged file', () => {
    writeCachedBundle(dir, 'rt:a', { text: 'a', savedAtMs: 1 });
    expect(statSync(bundleCacheFile(dir)).mode & 0o777).toBe(0o600);
    writeFileSync(bundleCacheFile(dir), '{"rt:a": {"text": 3');
    expect(readCachedBundle(dir, 'rt:a')).toBeNull();
    writeCachedBundle(dir, 'rt:a', { text: 'b', savedAtMs: 2 });
    expect(readCachedBundle(dir, 'rt:a')?.text).toBe('b');
  });

  it('tells the age coarsely', () => {
    expect(ageText(30_000)).toBe('less than a minute ago');
    expect(ageText(12 * 60_000)).toBe('12 min ago');
    expect(ageText(5 * 3_600_000)).toBe('5 h ago');
    expect(ageText(3 * 86_400_000)).toBe('3 days ago');
  });
});
