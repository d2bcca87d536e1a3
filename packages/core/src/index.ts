// The whole package: the wire contract (./contract.js, also its own entry) and what needs the
// tokenizer or Node-free builders on top of it: context building, formatters, resolvers.

export type { AgentCardJson, AgentCardOptions, AgentSkillJson } from './a2a/agent-card.js';
export { A2A_PROTOCOL_VERSION, agentCardFor, ROUTING_EXTENSION_URI } from './a2a/agent-card.js';
export type {
  AuditContent,
  AuditEvent,
  AuditKind,
  AuditRecord,
  AuditVerification,
} from './audit/audit-chain.js';
export {
  AUDIT_GENESIS,
  AUDIT_KINDS,
  AuditChainVerifier,
  auditEventSchema,
  auditHash,
  chainAuditRecord,
  verifyAuditChain,
} from './audit/audit-chain.js';
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
} from './context/context-builder.js';
export { BUILDER_VERSION, buildContext } from './context/context-builder.js';
export { markdownFormatter, plainLine, plainTextFormatter } from './context/formatters.js';
export type {
  ItemDelivery,
  ItemInjection,
  ResolvedContext,
  Resolver,
  ResolverWarning,
  RuntimeContextSpec,
  SharedContextBundle,
  SharedContextRequest,
} from './context/resolvers.js';
export {
  DEFAULT_RESOLVER,
  DEFAULT_RUNTIME_CONTEXT,
  getResolver,
  KNOWN_RUNTIMES,
  RESOLVERS,
  resolveItem,
  resolveSharedContext,
} from './context/resolvers.js';
export type {
  SelectOptions,
  SharedCandidates,
  SharedContextLimits,
  SharedContextViewer,
  SharedSectionId,
} from './context/shared-context.js';
export {
  candidatesFromItems,
  DEFAULT_SHARED_LIMITS,
  DONE_TAGS,
  SHARED_SECTIONS,
  SHARED_TRIM_ORDER,
  selectSharedContext,
  sharedCandidateQueries,
  sharedTaskQueries,
} from './context/shared-context.js';
export * from './contract.js';
export { stableId } from './items/decision-capture.js';
export type { NewContextItem, PrepareOptions, Writer } from './items/prepare-item.js';
export { deriveSummary, newItemId, prepareItem, prepareParsedItem } from './items/prepare-item.js';
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
} from './layers/context-exporter.js';
export {
  ContextExporter,
  EXPORT_LAYERS,
  exportConfigurationSchema,
  exportFilterSchema,
  exportTriggerSchema,
} from './layers/context-exporter.js';
export type {
  LayerBounds,
  LayerEntry,
  LayerOptimization,
  OptimizationAction,
  OptimizationTechnique,
  OptimizerConfig,
} from './layers/context-optimizer.js';
export {
  ContextOptimizer,
  compactValue,
  layerBoundsSchema,
  OPTIMIZATION_TECHNIQUES,
  optimizerConfigSchema,
  SUMMARY_ENTRY,
  SUMMARY_NAMES,
  summarizeSteps,
} from './layers/context-optimizer.js';
export type {
  ExecutionStep,
  ExecutionSummary,
  Inherit,
  JsonValue,
  RunBounds,
  RunContextOptions,
  StepStatus,
} from './layers/run-context.js';
export {
  createRunContext,
  DEFAULT_RUN_BOUNDS,
  jsonBytes,
  RunContext,
  runBoundsSchema,
  runVariableNameSchema,
  STEP_STATUSES,
} from './layers/run-context.js';
export { parseCapabilities } from './routing/parse-capabilities.js';
export { hashValue, sha256Hex } from './shared/canonical-hash.js';
export { canonicalJson } from './shared/canonical-json.js';
export {
  countTokens,
  effectiveBudget,
  o200kTokenCounter,
  TOKENIZER,
  truncateToTokens,
} from './shared/tokens.js';
