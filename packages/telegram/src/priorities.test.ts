import { describe, expect, it } from 'vitest';
import { canonicalPriorities } from './priorities.js';

describe('canonicalPriorities', () => {
  it('keeps the curated top section and leaves out the appended inputs', () => {
    const text = [
      '# Priorities',
      '',
      '1. Ship the Telegram bot',
      '2. Fix the flaky e2e test',
      '',
      '## Inbox (automated)',
      '- 2026-05-01 agent-x: try Postgres',
    ].join('\n');
    expect(canonicalPriorities(text)).toBe(
      '# Priorities\n\n1. Ship the Telegram bot\n2. Fix the flaky e2e test',
    );
  });

  it('stops at a thematic break and skips front matter', () => {
    const text = ['---', 'owner: curator', '---', '# Now', '- one', '---', '- appended'].join('\n');
    expect(canonicalPriorities(text)).toBe('# Now\n- one');
  });
});
