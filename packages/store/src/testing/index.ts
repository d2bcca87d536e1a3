export type {
  ConformanceCase,
  ConformanceContext,
  StoreConformanceOptions,
} from './store-conformance.js';
export { CONFORMANCE_CASES, runStoreConformance } from './store-conformance.js';
