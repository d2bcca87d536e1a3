import { describe, expect, it } from 'vitest';
import { bearerToken, hostNameOf, sameDigest, tokenDigest } from './http-guards.js';

describe('hostNameOf', () => {
  it('drops the port, keeps IPv6 brackets, lowercases, and rejects junk', () => {
    expect(hostNameOf('LocalHost:7420')).toBe('localhost');
    expect(hostNameOf('127.0.0.1')).toBe('127.0.0.1');
    expect(hostNameOf('[::1]:7420')).toBe('[::1]');
    expect(hostNameOf('evil.example@127.0.0.1')).toBeUndefined();
    expect(hostNameOf('')).toBeUndefined();
    expect(hostNameOf(null)).toBeUndefined();
  });
});

describe('bearerToken', () => {
  it('takes the token of a Bearer header only', () => {
    expect(bearerToken('Bearer cbx_abc')).toBe('cbx_abc');
    expect(bearerToken('bearer   cbx_abc  ')).toBe('cbx_abc');
    expect(bearerToken('Basic dXNlcjpwdw==')).toBeUndefined();
    expect(bearerToken('Bearer two words')).toBeUndefined();
    expect(bearerToken(null)).toBeUndefined();
  });
});

describe('token digests', () => {
  it('match only for the same token', () => {
    expect(sameDigest(tokenDigest('a'), tokenDigest('a'))).toBe(true);
    expect(sameDigest(tokenDigest('a'), tokenDigest('b'))).toBe(false);
  });
});
