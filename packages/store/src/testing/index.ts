export { damagedSqliteFile } from './damaged-sqlite.js';
export type { ServerProbe } from './postgres-test-server.js';
export {
  postgresRequired,
  probePostgres,
  ReusedSchemas,
  ScratchSchemas,
} from './postgres-test-server.js';
export type {
  ConformanceCase,
  ConformanceContext,
  StoreConformanceOptions,
} from './store-conformance.js';
export { CONFORMANCE_CASES, runStoreConformance } from './store-conformance.js';
export type { SupabaseRoleOutcome, SupabaseStandIn } from './supabase-stand-in.js';
export {
  createSupabaseStandIn,
  ensureSupabaseRoles,
  queryAsSupabaseRole,
} from './supabase-stand-in.js';
export { expectVectorScansAgree, randomVectors, VECTOR_CASES } from './vector-conformance.js';
export { withPostgresServer } from './with-postgres-server.js';
