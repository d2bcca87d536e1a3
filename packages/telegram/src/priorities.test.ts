import { PRIORITIES_TEMPLATE } from '@ctxbus/shared-context';
import { describe, expect, it } from 'vitest';
import { canonicalPriorities } from './priorities.js';

describe('canonicalPriorities', () => {
  it('keeps the curated section and leaves out the automated inputs', () => {
    const text = [
      '# Priorities',
      '',
      '## CANONICAL (curator)',
      '',
      '1. Ship the Telegram bot',
      '2. Fix the flaky e2e test',
      '',
      '## Automated inputs',
      '- 2026-05-01 agent-x: try Postgres',
    ].join('\n');
    expect(canonicalPriorities(text)).toBe('1. Ship the Telegram bot\n2. Fix the flaky e2e test');
  });

  it('is empty for the fresh template (its notes are comments)', () => {
    expect(canonicalPriorities(PRIORITIES_TEMPLATE)).toBe('');
  });
});
