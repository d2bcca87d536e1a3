import type { ContextItem, ContextItemInput, NewContextItem, Viewer } from '@ctxbus/core';
import { CtxbusError } from '@ctxbus/core';
import { expect } from 'vitest';
import type { Store } from '../store.js';

// What the parts of the conformance suite get from runStoreConformance, and who they act as.

export interface ConformanceHarness {
  store(): Store;
  now(): Date;
  advance(ms: number): void;
  /** An item prepared as `viewer` (acme by default) would write it, at the harness's now. */
  prepared(input: Partial<ContextItemInput>, viewer?: Viewer): NewContextItem;
  /** Writes one prepared item and returns it as stored. */
  write(input: Partial<ContextItemInput>, viewer?: Viewer): Promise<ContextItem>;
}

/** A runtime of team acme, another runtime of the same team, and another team. */
export const acme: Viewer = { teamId: 'acme', runtime: 'claude-code' };
export const acmeChat: Viewer = { teamId: 'acme', runtime: 'openclaw' };
export const globex: Viewer = { teamId: 'globex', runtime: 'claude-code' };

export function expectCode(error: unknown, code: string): void {
  expect(CtxbusError.isInstance(error), `expected a CtxbusError, got ${String(error)}`).toBe(true);
  expect((error as CtxbusError).code).toBe(code);
}

export async function rejectsWith(promise: Promise<unknown>, code: string): Promise<void> {
  try {
    await promise;
  } catch (error) {
    expectCode(error, code);
    return;
  }
  expect.fail(`expected the call to fail with ${code}`);
}

/** A small seeded PRNG (mulberry32), so random datasets are the same on every run and backend. */
export function seededRandom(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
