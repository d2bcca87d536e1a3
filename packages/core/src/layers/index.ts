// The three layers: the blackboard and swarm board, persistent resources, and run contexts with
// their exporter and optimizer.
export type { BlackboardEntryKind, BlackboardEvent, BlackboardRef } from './blackboard-contract.js';
export {
  BLACKBOARD_ENTRY_KINDS,
  BLACKBOARD_EVENT,
  BLACKBOARD_TAG,
  blackboardEntryKey,
  blackboardEntryNameSchema,
  blackboardEventOf,
  blackboardEventSchema,
  blackboardKeyPrefix,
  blackboardRefSchema,
  itemValue,
  parseBlackboardKey,
  REMOVED_TAG,
  RESOURCE_TAG,
  resourceKey,
  resourceNameSchema,
  TEXT_VALUE_TAG,
  valueContent,
} from './blackboard-contract.js';
export type { BlackboardWriter, ExportReport, ResourceWriter } from './context-exporter.js';
export { ContextExporter } from './context-exporter.js';
export type { LayerBounds, LayerEntry, OptimizationAction } from './context-optimizer.js';
export { ContextOptimizer } from './context-optimizer.js';
export type { ResourceType, ResourceView } from './persistent-resource.js';
export {
  DEFAULT_RESOURCE_TYPE,
  RESOURCE_TYPES,
  resourceOf,
  resourceTypeSchema,
  resourceTypeTag,
  resourceViewSchema,
} from './persistent-resource.js';
export type { ExecutionSummary, JsonValue } from './run-context.js';
export { createRunContext, RunContext } from './run-context.js';
export type { BoardListField, NotePriority, SwarmBlackboard } from './swarm-blackboard.js';
export {
  BOARD_LIST_FIELD_NAMES,
  BOARD_LIST_FIELDS,
  boardListValueSchema,
  entryKindOf,
  listEntryName,
  notePrioritySchema,
  priorityTag,
  swarmBlackboardOf,
  swarmBlackboardSchema,
} from './swarm-blackboard.js';
