export type {
  PostgresConnectionOptions,
  PostgresLogger,
} from './postgres/postgres-connection.js';
export { DEFAULT_POSTGRES_SCHEMA } from './postgres/postgres-connection.js';
export type {
  PgvectorStatus,
  PostgresMigration,
  PostgresMigrationResult,
} from './postgres/postgres-migrations.js';
export {
  migratePostgres,
  POSTGRES_MIGRATIONS,
  POSTGRES_SCHEMA_VERSION,
} from './postgres/postgres-migrations.js';
export type { PostgresStoreOptions } from './postgres/postgres-store.js';
export {
  changeChannel,
  listenerName,
  openPostgresStore,
  PostgresStore,
} from './postgres/postgres-store.js';
export type {
  SupabaseSetupOptions,
  SupabaseSetupResult,
} from './postgres/supabase-setup.js';
export {
  SUPABASE_ITEMS_POLICY,
  SUPABASE_REALTIME_PUBLICATION,
  SUPABASE_SETUP_VERSION,
  SUPABASE_TEAMS_CLAIM,
  setupSupabase,
  supabaseSetupSql,
} from './postgres/supabase-setup.js';
export type { QueryTerm, SearchQuery, SearchQueryOptions } from './search/search-query.js';
export {
  buildSearchQuery,
  CANDIDATE_LIMIT,
  extractQueryTerms,
  quoteFtsTerm,
} from './search/search-query.js';
export type {
  RankedItem,
  RerankCandidate,
  RerankOptions,
  RerankStats,
} from './search/search-rerank.js';
export {
  DEFAULT_RERANK_OPTIONS,
  NEIGHBOUR_WINDOW,
  rerankCandidates,
} from './search/search-rerank.js';
export { highlightPassage, STOPWORDS, stem, tokenize } from './search/search-text.js';
export type { SqliteMigration } from './sqlite/sqlite-migrations.js';
export { SQLITE_MIGRATIONS, SQLITE_SCHEMA_VERSION } from './sqlite/sqlite-migrations.js';
export type { SqliteStoreOptions } from './sqlite/sqlite-store.js';
export { openSqliteStore, SqliteStore } from './sqlite/sqlite-store.js';
export type {
  ArchivedItem,
  Change,
  ChangeKind,
  DeadLetter,
  EmbeddingSource,
  ItemVector,
  ListSubscriptionsOptions,
  ListTokensOptions,
  ReadChangesOptions,
  SearchHit,
  SearchOptions,
  Store,
  StoreInfo,
  SubscriptionProgress,
  SubscriptionRecord,
  SweepOptions,
  SweepResult,
  TokenRecord,
  TokenRole,
  VectorHit,
  VectorIndex,
  VectorSearchOptions,
  WriteOutcome,
  WriteStatus,
} from './store.js';
export {
  bytesToVector,
  dotProduct,
  normalizeVector,
  vectorToBytes,
} from './vectors/vector-math.js';
