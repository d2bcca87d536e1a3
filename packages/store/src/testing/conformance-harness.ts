import type { ContextItem, ContextItemInput, Viewer } from '@ctxbus/core';
import type { Store } from '../store.js';

// What the parts of the conformance suite get from runStoreConformance, and who they act as.

export interface ConformanceHarness {
  store(): Store;
  now(): Date;
  advance(ms: number): void;
  write(input: Partial<ContextItemInput>, viewer?: Viewer): Promise<ContextItem>;
}

/** A runtime of team acme, another runtime of the same team, and another team. */
export const acme: Viewer = { teamId: 'acme', runtime: 'claude-code' };
export const acmeChat: Viewer = { teamId: 'acme', runtime: 'openclaw' };
export const globex: Viewer = { teamId: 'globex', runtime: 'claude-code' };
