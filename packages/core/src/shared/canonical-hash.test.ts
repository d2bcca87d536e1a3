import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { describe, expect, it } from 'vitest';
import { hashValue, sha256Hex } from './canonical-hash.js';

// In Node, sha256Hex takes node:crypto's SHA-256; browsers take noble's. Both must give the same
// hex for every string, or ids and hashes written by a hub would not match a browser's.
describe('sha256Hex', () => {
  it("is SHA-256 of the UTF-8 text, the same as noble's (the browser's path)", () => {
    expect(sha256Hex('abc')).toBe(
      'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    );
    const texts = [
      '',
      'plain',
      'émoji 🚀 日本語',
      'nul \u0000 inside',
      'lone \ud800 surrogate',
      'x'.repeat(100_000),
    ];
    for (const text of texts) expect(sha256Hex(text)).toBe(bytesToHex(sha256(utf8ToBytes(text))));
  });

  it('hashes values by their canonical JSON (key order does not matter)', () => {
    expect(hashValue({ b: 1, a: [2, 'x'] })).toBe(hashValue({ a: [2, 'x'], b: 1 }));
    expect(hashValue({ a: 1 })).not.toBe(hashValue({ a: 2 }));
  });
});
