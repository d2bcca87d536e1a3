export type { SearchQuery } from './search-query.js';
export { buildSearchQuery } from './search-query.js';
export type { SqliteMigration } from './sqlite/sqlite-migrations.js';
export { SQLITE_MIGRATIONS, SQLITE_SCHEMA_VERSION } from './sqlite/sqlite-migrations.js';
export type { SqliteStoreOptions } from './sqlite/sqlite-store.js';
export { openSqliteStore, SqliteStore } from './sqlite/sqlite-store.js';
export type {
  Change,
  ChangeKind,
  ListTokensOptions,
  ReadChangesOptions,
  SearchHit,
  SearchOptions,
  Store,
  StoreInfo,
  TokenRecord,
  TokenRole,
  WriteOutcome,
  WriteStatus,
} from './store.js';
