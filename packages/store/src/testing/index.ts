export type { ServerProbe } from '../postgres/postgres-test-server.js';
export {
  postgresRequired,
  probePostgres,
  ScratchSchemas,
} from '../postgres/postgres-test-server.js';
export type { SupabaseRoleOutcome, SupabaseStandIn } from '../postgres/supabase-stand-in.js';
export {
  createSupabaseStandIn,
  ensureSupabaseRoles,
  queryAsSupabaseRole,
} from '../postgres/supabase-stand-in.js';
export type {
  ConformanceCase,
  ConformanceContext,
  StoreConformanceOptions,
} from './store-conformance.js';
export { CONFORMANCE_CASES, runStoreConformance } from './store-conformance.js';
export { expectVectorScansAgree, randomVectors, VECTOR_CASES } from './vector-conformance.js';
export { withPostgresServer } from './with-postgres-server.js';
