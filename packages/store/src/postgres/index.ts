// `@ctxbus/store/postgres`: the PostgreSQL backend, on its own subpath so that `pg` is loaded
// only by those who use it (the root entry is the contract and the embedded SQLite store).
export type { PostgresConnectionOptions, PostgresLogger } from './postgres-connection.js';
export { DEFAULT_POSTGRES_SCHEMA } from './postgres-connection.js';
export type {
  PgvectorStatus,
  PostgresMigration,
  PostgresMigrationResult,
} from './postgres-migrations.js';
export {
  migratePostgres,
  POSTGRES_MIGRATIONS,
  POSTGRES_SCHEMA_VERSION,
} from './postgres-migrations.js';
export type { PostgresStoreOptions } from './postgres-store.js';
export {
  changeChannel,
  listenerName,
  openPostgresStore,
  PostgresStore,
} from './postgres-store.js';
export type { SupabaseSetupOptions, SupabaseSetupResult } from './supabase-setup.js';
export {
  SUPABASE_ITEMS_POLICY,
  SUPABASE_REALTIME_PUBLICATION,
  SUPABASE_SETUP_VERSION,
  SUPABASE_TEAMS_CLAIM,
  setupSupabase,
  supabaseSetupSql,
} from './supabase-setup.js';
