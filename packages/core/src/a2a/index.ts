// The A2A agent card a hub publishes for its runtimes.
export { agentCardFor, ROUTING_EXTENSION_URI } from './agent-card.js';
