// The whole package: the wire contract (./contract.js, also its own entry) and what needs the
// tokenizer or Node-free builders on top of it: context building, formatters, resolvers.

export { canonicalJson, hashValue, sha256Hex } from './canonical-hash.js';
export type { CapabilitiesFile, Capability, CapabilityMode } from './capabilities.js';
export {
  CAPABILITY_MODES,
  capabilitiesFileSchema,
  capabilityMode,
  capabilityNames,
  parseCapabilities,
  TRUST_LEVELS,
  WELL_KNOWN_CAPABILITIES,
} from './capabilities.js';
export type { CapabilitiesResponse, CapabilitiesRuntime } from './capabilities-api-schemas.js';
export {
  capabilitiesQuerySchema,
  capabilitiesResponseSchema,
  capabilitiesRuntimeSchema,
  runtimePresenceViewSchema,
} from './capabilities-api-schemas.js';
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
export * from './contract.js';
export { markdownFormatter, plainLine, plainTextFormatter } from './formatters.js';
export type { NewContextItem, PrepareOptions, Writer } from './prepare-item.js';
export { deriveSummary, newItemId, prepareItem, prepareParsedItem } from './prepare-item.js';
export type {
  Resolver,
  ResolverWarning,
  SharedContextBundle,
  SharedContextRequest,
} from './resolvers.js';
export { getResolver, KNOWN_RUNTIMES, RESOLVERS, resolveSharedContext } from './resolvers.js';
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
} from './shared-context.js';
export { countTokens, effectiveBudget, TOKENIZER, truncateToTokens } from './tokens.js';
