import type { ContextItem } from './context-item.js';
import { prepareItem } from './prepare-item.js';

let seq = 0;

/** A stored item as a store would return it, for tests of pure code. */
export function storedItem(
  input: Record<string, unknown>,
  overrides: Partial<ContextItem> = {},
  writer = { teamId: 'acme', runtime: 'claude-code' },
): ContextItem {
  seq += 1;
  const { inputHash: _hash, ...prepared } = prepareItem(
    { type: 'discovery', title: `Item ${seq}`, ...input },
    writer,
    { now: new Date(Date.UTC(2026, 10, 1, 0, 0, seq)) },
  );
  return {
    ...prepared,
    seq,
    supersededBy: null,
    consumed: false,
    consumedBy: [],
    ...overrides,
  };
}
