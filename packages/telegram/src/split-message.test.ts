import { describe, expect, it } from 'vitest';
import { splitMessage, TELEGRAM_MESSAGE_LIMIT } from './split-message.js';

describe('splitMessage', () => {
  it('keeps a short text as one message', () => {
    expect(splitMessage('hello\nworld')).toEqual(['hello\nworld']);
  });

  it('cuts at line boundaries, each message within the limit, nothing lost', () => {
    const lines = Array.from({ length: 400 }, (_, i) => `- item ${i}: ${'word '.repeat(5)}`.trim());
    const messages = splitMessage(lines.join('\n'));
    expect(messages.length).toBeGreaterThan(1);
    for (const message of messages) expect(message.length).toBeLessThanOrEqual(4_096);
    expect(messages.join('\n').split('\n')).toEqual(lines);
  });

  it('cuts an over-long line between words, never inside one', () => {
    const line = Array.from({ length: 2_000 }, (_, i) => `w${i}`).join(' ');
    const messages = splitMessage(line, 100);
    for (const message of messages) {
      expect(message.length).toBeLessThanOrEqual(100);
      expect(message).toMatch(/^w\d+( w\d+)*$/);
    }
    expect(messages.join(' ')).toBe(line);
  });

  it('cuts a giant word between code points, never inside a surrogate pair', () => {
    const word = '😀'.repeat(3_000);
    const messages = splitMessage(word, TELEGRAM_MESSAGE_LIMIT);
    for (const message of messages) {
      expect(message.length).toBeLessThanOrEqual(TELEGRAM_MESSAGE_LIMIT);
      expect(message).toMatch(/^(😀)+$/u);
    }
    expect(messages.join('')).toBe(word);
  });

  it('drops empty messages', () => {
    expect(splitMessage('\n\n  \n')).toEqual([]);
  });
});
