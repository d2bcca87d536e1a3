// The whole package: the wire contract (./contract.js, also its own entry) and what needs the
// tokenizer or Node-free builders on top of it: context building, formatters, resolvers.

export type { AgentCardJson, AgentCardOptions, AgentSkillJson } from './agent-card.js';
export { A2A_PROTOCOL_VERSION, agentCardFor, ROUTING_EXTENSION_URI } from './agent-card.js';
export type {
  AuditContent,
  AuditEvent,
  AuditKind,
  AuditRecord,
  AuditVerification,
} from './audit-chain.js';
export {
  AUDIT_GENESIS,
  AUDIT_KINDS,
  AuditChainVerifier,
  auditEventSchema,
  auditHash,
  chainAuditRecord,
  verifyAuditChain,
} from './audit-chain.js';
export { hashValue, sha256Hex } from './canonical-hash.js';
export { canonicalJson } from './canonical-json.js';
export type {
  BuildConfig,
  BuiltContext,
  BuiltEntry,
  BuiltSection,
  ContextEntry,
  ContextFormatter,
  ContextSection,
  ContextSnapshot,
  DocumentHeader,
  EntryMeta,
  EntryMode,
  ItemRef,
  RenderedSection,
  TrimAction,
  TrimRecord,
  TrimStep,
} from './context-builder.js';
export { BUILDER_VERSION, buildContext } from './context-builder.js';
export type {
  BlackboardWriter,
  ExportConfiguration,
  ExportEvent,
  ExportFilter,
  ExportLayer,
  ExportReport,
  ExportTargets,
  ExportTrigger,
  ResourceWriter,
} from './context-exporter.js';
export {
  ContextExporter,
  EXPORT_LAYERS,
  exportConfigurationSchema,
  exportFilterSchema,
  exportTriggerSchema,
} from './context-exporter.js';
export type {
  LayerBounds,
  LayerEntry,
  LayerOptimization,
  OptimizationAction,
  OptimizationTechnique,
  OptimizerConfig,
} from './context-optimizer.js';
export {
  ContextOptimizer,
  compactValue,
  layerBoundsSchema,
  OPTIMIZATION_TECHNIQUES,
  optimizerConfigSchema,
  SUMMARY_ENTRY,
  SUMMARY_NAMES,
  summarizeSteps,
} from './context-optimizer.js';
export * from './contract.js';
export { stableId } from './decision-capture.js';
export { markdownFormatter, plainLine, plainTextFormatter } from './formatters.js';
export { parseCapabilities } from './parse-capabilities.js';
export type { NewContextItem, PrepareOptions, Writer } from './prepare-item.js';
export { deriveSummary, newItemId, prepareItem, prepareParsedItem } from './prepare-item.js';
export type {
  ItemDelivery,
  ItemInjection,
  ResolvedContext,
  Resolver,
  ResolverWarning,
  RuntimeContextSpec,
  SharedContextBundle,
  SharedContextRequest,
} from './resolvers.js';
export {
  DEFAULT_RESOLVER,
  DEFAULT_RUNTIME_CONTEXT,
  getResolver,
  KNOWN_RUNTIMES,
  RESOLVERS,
  resolveItem,
  resolveSharedContext,
} from './resolvers.js';
export type {
  ExecutionStep,
  ExecutionSummary,
  Inherit,
  JsonValue,
  RunBounds,
  RunContextOptions,
  StepStatus,
} from './run-context.js';
export {
  createRunContext,
  DEFAULT_RUN_BOUNDS,
  jsonBytes,
  RunContext,
  runBoundsSchema,
  runVariableNameSchema,
  STEP_STATUSES,
} from './run-context.js';
export type {
  SelectOptions,
  SharedCandidates,
  SharedContextLimits,
  SharedContextViewer,
  SharedSectionId,
} from './shared-context.js';
export {
  candidatesFromItems,
  DEFAULT_SHARED_LIMITS,
  DONE_TAGS,
  SHARED_SECTIONS,
  SHARED_TRIM_ORDER,
  selectSharedContext,
  sharedCandidateQueries,
  sharedTaskQueries,
} from './shared-context.js';
export {
  countTokens,
  effectiveBudget,
  o200kTokenCounter,
  TOKENIZER,
  truncateToTokens,
} from './tokens.js';
