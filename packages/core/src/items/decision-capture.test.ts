import { describe, expect, it } from 'vitest';
import { extractDecisions, MAX_DECISION_CHARS, stableId } from './decision-capture.js';

describe('decision capture', () => {
  it('extracts only explicitly stated decisions', () => {
    expect(
      extractDecisions(
        'We talked.\nDecision: use pnpm\n* Decision: Biome for lint\n**Decision**: no ORMs\nA decision was hinted.',
      ),
    ).toEqual(['use pnpm', 'Biome for lint', 'no ORMs']);
    expect(extractDecisions('no decisions here')).toEqual([]);
  });

  it('takes nothing from fenced code or quoted lines, nor a lowercase `decision:` key', () => {
    const reply = [
      'Here is an example of the format:',
      '```',
      'Decision: drop the users table',
      '```',
      'And the workflow file:',
      '~~~~yaml',
      'review:',
      '  decision: approved-by-bot',
      '```',
      'Decision: still inside the tilde fence',
      '~~~~',
      '> Decision: what the user quoted',
      'decision: approved-by-bot',
      'DECISION: keep the outbox',
      'Decision: use pnpm',
    ].join('\n');
    expect(extractDecisions(reply)).toEqual(['keep the outbox', 'use pnpm']);
    // An unclosed fence runs to the end: nothing after it is taken.
    expect(extractDecisions('Decision: a\n```\nDecision: b')).toEqual(['a']);
    expect(extractDecisions('Decision: a\r\nDecision: b\r\n')).toEqual(['a', 'b']);
  });

  it('derives stable UUIDs the hub accepts', () => {
    const id = stableId('a', 'b');
    expect(id).toBe(stableId('a', 'b'));
    expect(id).not.toBe(stableId('a', 'c'));
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('keeps the ids it gave before it moved to core (queued outbox items keep theirs)', () => {
    // Values from the adapter's earlier node:crypto implementation.
    expect(stableId('a', 'b')).toBe('59b271ae-1bbc-81d3-9d41-929817f4b16f');
    expect(stableId('sessión', '✓')).toBe('0d739f43-9a42-8385-890d-438f88fcff06');
  });

  it('cuts a runaway decision line to MAX_DECISION_CHARS, so the hub records it', () => {
    const [decision] = extractDecisions(`Decision: use the schema ${'x'.repeat(100_010)}`);
    expect(decision).toHaveLength(MAX_DECISION_CHARS);
    expect(decision?.endsWith('…')).toBe(true);
  });
});
