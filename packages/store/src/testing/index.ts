export type { ServerProbe } from '../postgres/postgres-test-server.js';
export {
  postgresRequired,
  probePostgres,
  ScratchSchemas,
} from '../postgres/postgres-test-server.js';
export type {
  ConformanceCase,
  ConformanceContext,
  StoreConformanceOptions,
} from './store-conformance.js';
export { CONFORMANCE_CASES, runStoreConformance } from './store-conformance.js';
