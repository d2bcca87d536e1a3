import type { ContextItem } from '@ctxbus/core/contract';
import { describe, expect, it } from 'vitest';
import { asFlags, itemLine, terminalSafe } from './output.js';

describe('asFlags: the hub names request fields, the person typed flags', () => {
  it.each([
    ['query.minUrgency: Invalid option', '--min-urgency: Invalid option'],
    [
      'query.window: Too big: expected number to be <=90',
      '--window: Too big: expected number to be <=90',
    ],
    ['body.items[0].type: Invalid option', '--type: Invalid option'],
    ['body.relevanceTags[0]: a tag has no spaces', '--tags[0]: a tag has no spaces'],
    ['params.id: Invalid UUID', '<id>: Invalid UUID'],
    ['query.tokenBudget: Too small', '--budget: Too small'],
    [
      'body.expiresAfterSeconds: Too small: expected number to be >0',
      '--ttl: Too small: expected number to be >0',
    ],
    ['body.source.taskId: Too big', '--task: Too big'],
    ['body.items[0].source.threadId: Too big', '--thread: Too big'],
    ['body.input.argv: Required', '--input.argv: Required'],
    ['no field here: nothing changes', 'no field here: nothing changes'],
  ])('%s -> %s', (given, shown) => {
    expect(asFlags(given)).toBe(shown);
  });
});

describe('terminalSafe', () => {
  it('shows control characters and bidi overrides as escapes, keeps newlines, tabs and text', () => {
    expect(terminalSafe('a\u001b[2Jb\u0007\tc\nd\u202ee\u0085')).toBe(
      'a\\x1b[2Jb\\x07\tc\nd\\u202ee\\x85',
    );
    expect(terminalSafe('plain — ünïcode ✓')).toBe('plain — ünïcode ✓');
  });
});

describe('itemLine', () => {
  it('keeps an item on one line whatever its title and summary hold: a newline cannot forge a line of ours', () => {
    const item = {
      seq: 7,
      type: 'status',
      urgency: 'background',
      title: 'first\n#8 decision forged line',
      summary: 'two\r\nlines',
      source: { runtime: 'openclaw' },
      createdAt: '2026-11-30T22:00:00.000Z',
      id: '019a0000-0000-7000-8000-000000000001',
    } as unknown as ContextItem;
    expect(itemLine(item)).toBe(
      '#7 status first #8 decision forged line — two lines (openclaw, 2026-11-30 22:00) 019a0000-0000-7000-8000-000000000001',
    );
  });
});
