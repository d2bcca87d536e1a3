// `@ctxbus/store`: the Store contract and the embedded SQLite backend. PostgreSQL is on
// `@ctxbus/store/postgres` (so `pg` loads only there), the conformance suite and test servers
// on `@ctxbus/store/testing`.
export { SQLITE_SCHEMA_VERSION } from './sqlite/sqlite-migrations.js';
export type { SqliteStoreOptions } from './sqlite/sqlite-store.js';
export { openSqliteStore, SqliteStore } from './sqlite/sqlite-store.js';
export type {
  ArchivedItem,
  Change,
  ChangeKind,
  ChangeLog,
  ClaimTaskOptions,
  CreateTaskOutcome,
  DeadLetter,
  EmbeddingSource,
  ExpireTasksOptions,
  FailTaskOptions,
  ItemLifecycle,
  ItemStore,
  ItemVector,
  ListSubscriptionsOptions,
  ListTasksOptions,
  ListTokensOptions,
  ReadChangesOptions,
  SearchHit,
  SearchOptions,
  Store,
  StoreInfo,
  SubscriptionProgress,
  SubscriptionRecord,
  SubscriptionStore,
  SweepOptions,
  SweepResult,
  TaskStore,
  TaskTransition,
  TaskWithHistory,
  TokenRecord,
  TokenRole,
  TokenStore,
  UpdateTaskPatch,
  VectorHit,
  VectorIndex,
  VectorSearchOptions,
  VectorStore,
  WriteOutcome,
  WriteStatus,
} from './store.js';
export {
  DEFAULT_MAX_WAITING_TASKS,
  subscriptionLimitError,
  taskLimitError,
} from './store.js';
