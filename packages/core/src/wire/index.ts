// The hub's HTTP API on the wire: one table of routes (method, path, auth, schemas) that the
// hub implements and every client derives its calls from, and the rules for building a request.
export type { QueryValue } from './wire-request.js';
export { wirePath, wireQueryString, wireTarget } from './wire-request.js';
export type { HttpMethod, RouteAuth, WireRoute, WireTable } from './wire-route.js';
export { defineWireTable } from './wire-route.js';
export type { WireOperationId, WireRoutes } from './wire-routes.js';
export { wireRoutes } from './wire-routes.js';
export {
  agentCardSchema,
  deadLettersQuerySchema,
  deleteSubscriptionResponseSchema,
  jsonRpcResponseSchema,
  leavePresenceResponseSchema,
  listTokensResponseSchema,
  openApiDocumentSchema,
  revokeTokenResponseSchema,
  runtimeParamsSchema,
  streamStatsSchema,
  taskStatsSchema,
} from './wire-schemas.js';
export type { WireBody, WireInput, WireOutput, WireParams, WireQuery } from './wire-types.js';
