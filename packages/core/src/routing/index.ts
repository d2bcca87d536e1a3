// Runtimes and where work goes: the capabilities matrix (capabilities.yaml), runtime presence,
// and the router that picks a runtime for a task.

export type { CapabilitiesFile } from './capabilities.js';
export {
  AGENT_RUNTIMES,
  agentApprovers,
  approversOf,
  CAPABILITY_MODES,
  capabilitiesFileSchema,
  capabilitiesJsonSchema,
  capabilityMode,
  capabilityNames,
  personRefusal,
} from './capabilities.js';
export type { CapabilitiesResponse, CapabilitiesRuntime } from './capabilities-api-schemas.js';
export { capabilitiesResponseSchema } from './capabilities-api-schemas.js';
export { parseCapabilities } from './parse-capabilities.js';
export type { PresenceInstance, PresenceKind, RuntimePresenceEntry } from './presence.js';
export { defaultCapacity, summarizePresence } from './presence.js';
export type { RouteRequest, RoutingDecision, RoutingKind, RuntimePresence } from './routing.js';
export { routeRequestSchema, routeTask, routingDecisionSchema } from './routing.js';
