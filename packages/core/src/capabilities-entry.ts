// Capabilities and routing without the tokenizer: what `ctxbus capabilities`, `ctxbus route`
// and `ctxbus worker` need (the YAML parser, the matrix, the router), and nothing that counts
// tokens. The root entry re-exports it all.
export type { CapabilitiesFile, Capability, CapabilityMode } from './capabilities.js';
export {
  approversOf,
  capabilitiesJsonSchema,
  capabilityMode,
  capabilityNames,
  personRefusal,
} from './capabilities.js';
export type { CapabilitiesResponse } from './capabilities-api-schemas.js';
export { capabilitiesResponseSchema } from './capabilities-api-schemas.js';
export { parseCapabilities } from './parse-capabilities.js';
export type { RoutingDecision, RuntimePresence } from './routing.js';
export { routeRequestSchema, routeTask } from './routing.js';
