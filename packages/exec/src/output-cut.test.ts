import { redactSecrets } from '@ctxbus/core';
import { describe, expect, it } from 'vitest';
import { fromWholeLine, toWholeLine } from './output-cut.js';

// The cuts themselves: whatever the cut point inside a secret, what is kept, once redacted, holds
// no run of its characters.

const TOKEN = `ghp_${'Q7w9E2r4T6'.repeat(4)}`;
const KEY = [
  '-----BEGIN OPENSSH PRIVATE KEY-----',
  'b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW',
  'QyNTUxOQAAACDmXq8u2bXhA0n0Vh1Hk3vVJ6cX1w3l6wA7o5QJ8QyJmAAAAJiQ9c8pkPXP',
  '-----END OPENSSH PRIVATE KEY-----',
].join('\n');
const OUTPUT = `building\npassword: hunter2-and-more\nAuthorization: Bearer ${TOKEN}\n${KEY}\ndone\n`;

/** Every piece of the secret of at least 6 characters found in `text`. */
function pieces(secret: string, text: string): string[] {
  const found: string[] = [];
  for (let at = 0; at + 6 <= secret.length; at++) {
    const piece = secret.slice(at, at + 6);
    if (text.includes(piece) && !/^[-\sA-Z]+$/.test(piece)) found.push(piece);
  }
  return found;
}

describe('output cuts', () => {
  it('leave no piece of a secret beside a cut, wherever it falls', () => {
    for (let cut = 1; cut < OUTPUT.length; cut++) {
      const kept = [
        redactSecrets(fromWholeLine(OUTPUT.slice(cut)), 'tail').text,
        redactSecrets(toWholeLine(OUTPUT.slice(0, cut)), 'head').text,
      ].join('\n');
      for (const secret of [TOKEN, 'hunter2-and-more', KEY.split('\n')[1] as string]) {
        expect(pieces(secret, kept), `cut at ${cut}`).toEqual([]);
      }
    }
  });

  it('keep whole lines, and a key whole or not at all', () => {
    expect(fromWholeLine('ld\nnext\nlast')).toBe('next\nlast');
    expect(fromWholeLine('no break at all')).toBe('');
    expect(fromWholeLine('x\r\nnext')).toBe('\nnext');
    expect(toWholeLine('first\nsecond\nthi')).toBe('first\nsecond\n');
    expect(toWholeLine('no break at all')).toBe('');
    const afterKeyStart = fromWholeLine(OUTPUT.slice(OUTPUT.indexOf('-----BEGIN') + 3));
    expect(afterKeyStart).toBe('done\n');
    expect(fromWholeLine(`x\n${KEY}\nafter`)).toBe(`${KEY}\nafter`);
  });
});
