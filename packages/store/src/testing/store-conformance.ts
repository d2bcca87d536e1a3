import type { ContextItemInput, NewContextItem, Viewer } from '@ctxbus/core';
import { prepareItem } from '@ctxbus/core';
import { afterEach, beforeEach, describe, it } from 'vitest';
import type { Store } from '../store.js';
import { AUDIT_CASES, auditCases } from './audit-conformance.js';
import { CHANGE_LOG_CASES, changeLogCases } from './change-log-conformance.js';
import { acme } from './conformance-harness.js';
import type { ItemHarness } from './item-conformance.js';
import { ITEM_CASES, itemCases } from './item-conformance.js';
import { LIFECYCLE_CASES, lifecycleCases } from './lifecycle-conformance.js';
import { PRESENCE_CASES, presenceCases } from './presence-conformance.js';
import { SEARCH_CASES, searchCases } from './search-conformance.js';
import { SUBSCRIPTION_CASES, subscriptionCases } from './subscription-conformance.js';
import { TASK_CASES, taskCases } from './task-conformance.js';
import { TOKEN_CASES, tokenCases } from './token-conformance.js';
import { USAGE_CASES, usageCases } from './usage-conformance.js';
import { VECTOR_CASES, vectorCases } from './vector-conformance.js';

// The runner of the store contract's cases: one file of cases per domain of the contract
// (item-, change-log-, token-, subscription-, lifecycle-, vector-, search-, task-,
// audit-conformance.ts, presence-conformance.ts, usage-conformance.ts),
// each given the same harness.

export interface ConformanceContext {
  clock: () => Date;
  /** Pass on as the store's cap of waiting tasks per runtime, when given (the task cases). */
  maxWaitingTasksPerRuntime?: number;
}

export interface StoreConformanceOptions {
  name: string;
  /** A fresh, empty store that reads time from `clock`. */
  createStore(context: ConformanceContext): Promise<Store>;
  /** Closes `store` and opens the same database again; omit if the backend cannot. */
  reopenStore?(store: Store, context: ConformanceContext): Promise<Store>;
  /**
   * Runs SQL straight in `store`'s database, tables unqualified (the audit log's tampering
   * case); omit if the backend cannot (then skip `audit-tamper` with the reason).
   */
  execSql?(store: Store, sql: string): Promise<void>;
  /** A second store over `store`'s database (concurrent appends); absent: the same store. */
  openSibling?(store: Store, context: ConformanceContext): Promise<Store>;
  /** Cases to skip, each with the reason (printed in the test name). */
  skip?: Partial<Record<ConformanceCase, string>>;
  /** Only these cases (a second run of part of the suite, with other store options). */
  only?: readonly ConformanceCase[];
}

export const CONFORMANCE_CASES = [
  ...ITEM_CASES,
  ...CHANGE_LOG_CASES,
  ...TOKEN_CASES,
  ...SUBSCRIPTION_CASES,
  ...LIFECYCLE_CASES,
  ...VECTOR_CASES,
  ...SEARCH_CASES,
  ...TASK_CASES,
  ...AUDIT_CASES,
  ...PRESENCE_CASES,
  ...USAGE_CASES,
] as const;

export type ConformanceCase = (typeof CONFORMANCE_CASES)[number];

/** When every case starts. */
const START = Date.parse('2026-11-21T12:00:00.000Z');

/**
 * The store contract as tests, written once and run against every backend
 * (`runStoreConformance({ name, createStore })` inside a vitest file).
 */
export function runStoreConformance(options: StoreConformanceOptions): void {
  describe(`store conformance: ${options.name}`, () => {
    let nowMs = START;
    const clock = () => new Date(nowMs);
    let store: Store;

    const prepared = (input: Partial<ContextItemInput>, viewer: Viewer = acme): NewContextItem =>
      prepareItem({ type: 'discovery', title: 'untitled', ...input }, viewer, { now: clock() });
    const write = async (input: Partial<ContextItemInput>, viewer: Viewer = acme) => {
      const [outcome] = await store.writeItems([prepared(input, viewer)]);
      if (!outcome) throw new Error('no outcome');
      return outcome.item;
    };

    beforeEach(async () => {
      nowMs = START;
      store = await options.createStore({ clock });
    });
    afterEach(async () => {
      await store.close();
    });

    const test = (name: ConformanceCase, body: () => Promise<void>) => {
      if (options.only && !options.only.includes(name)) return;
      const reason = options.skip?.[name];
      if (reason !== undefined) it.skip(`${name} (skipped: ${reason})`, body);
      else it(name, body);
    };

    const harness: ItemHarness = {
      store: () => store,
      now: clock,
      advance: (ms) => {
        nowMs += ms;
      },
      prepared,
      write,
      reopen: async () => {
        if (!options.reopenStore) throw new Error('reopenStore is required unless skipped');
        store = await options.reopenStore(store, { clock });
        return store;
      },
      restart: async () => {
        await store.close();
        store = await options.createStore({ clock });
        nowMs = START;
        return store;
      },
    };
    const run = <C extends ConformanceCase>(
      names: readonly C[],
      cases: Record<C, () => Promise<void>>,
    ) => {
      for (const name of names) test(name, cases[name]);
    };
    run(ITEM_CASES, itemCases(harness));
    run(CHANGE_LOG_CASES, changeLogCases(harness));
    run(TOKEN_CASES, tokenCases(harness));
    run(SUBSCRIPTION_CASES, subscriptionCases(harness));
    run(LIFECYCLE_CASES, lifecycleCases(harness));
    run(VECTOR_CASES, vectorCases(harness));
    run(
      SEARCH_CASES,
      searchCases({ ...harness, freshStore: () => options.createStore({ clock }) }),
    );
    run(
      TASK_CASES,
      taskCases({
        ...harness,
        cappedStore: (cap) => options.createStore({ clock, maxWaitingTasksPerRuntime: cap }),
      }),
    );
    const { execSql, openSibling } = options;
    run(
      AUDIT_CASES,
      auditCases({
        ...harness,
        ...(execSql && { execSql: (sql: string) => execSql(store, sql) }),
        ...(openSibling && { sibling: () => openSibling(store, { clock }) }),
      }),
    );
    run(
      PRESENCE_CASES,
      presenceCases({
        ...harness,
        ...(openSibling && { sibling: () => openSibling(store, { clock }) }),
      }),
    );
    run(USAGE_CASES, usageCases(harness));
  });
}
