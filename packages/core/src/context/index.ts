// Building context: the deterministic builder, formatters, per-runtime resolvers, the shared
// bundle's selection and seed 002's turn context.
export type { ContextEntry, ContextSection } from './context-builder.js';
export { buildContext } from './context-builder.js';
export { inertInline, inertMarkdown, markdownFormatter, plainLine } from './formatters.js';
export type { ItemUses, UsedItem } from './frequent-documents.js';
export {
  DOCUMENT_KEY_ROOTS,
  DOCUMENT_TAGS,
  documentFilters,
  FREQUENT_DOC_USES,
  FREQUENT_DOCS_WINDOW_DAYS,
  frequentDocsWindow,
  isDocument,
  rankDocuments,
} from './frequent-documents.js';
export {
  DEFAULT_RESOLVER,
  DEFAULT_RUNTIME_CONTEXT,
  getResolver,
  resolveItem,
  resolveSharedContext,
} from './resolvers.js';
export type { SharedCandidates, SharedSectionId } from './shared-context.js';
export {
  candidatesFromItems,
  DEFAULT_SHARED_LIMITS,
  DONE_TAGS,
  frequentDocsCandidateLimit,
  selectSharedContext,
  sharedCandidateQueries,
  sharedTaskQueries,
} from './shared-context.js';
export type {
  BuiltTurnContext,
  ContextBuildFailure,
  TokenCounter,
  TurnBuildResult,
  TurnContextInput,
  TurnContextRecord,
  TurnMemoryPointer,
  TurnSnapshot,
} from './turn-context.js';
export {
  buildTurnContext,
  DEFAULT_TURN_BUDGETS,
  estimateTokenCounter,
  tryBuildTurnContext,
  turnContextRecord,
  utf8EstimateTokenCounter,
} from './turn-context.js';
export { turnContextRecordSchema } from './turn-context-schema.js';
