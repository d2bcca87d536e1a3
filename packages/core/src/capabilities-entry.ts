// Capabilities and routing without the tokenizer: what `ctxbus capabilities`, `ctxbus route`
// and `ctxbus worker` need (the YAML parser, the matrix, the router), and nothing that counts
// tokens; each name straight from its file. The root entry re-exports it all.

export type { CapabilitiesFile } from './routing/capabilities.js';
export {
  agentApprovers,
  approversOf,
  capabilitiesJsonSchema,
  capabilityMode,
  capabilityNames,
  personRefusal,
} from './routing/capabilities.js';
export type { CapabilitiesResponse } from './routing/capabilities-api-schemas.js';
export { capabilitiesResponseSchema } from './routing/capabilities-api-schemas.js';
export { parseCapabilities } from './routing/parse-capabilities.js';
export type { RoutingDecision, RuntimePresence } from './routing/routing.js';
export { routeRequestSchema, routeTask } from './routing/routing.js';
