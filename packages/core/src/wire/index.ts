// The hub's HTTP API on the wire: one table of routes (method, path, auth, schemas) that the
// hub implements and every client derives its calls from, and the rules for building a request.
export { wireTarget } from './wire-request.js';
export type { HttpMethod, RouteAuth, WireRoute } from './wire-route.js';
export type { WireOperationId, WireRoutes } from './wire-routes.js';
export { wireRoutes } from './wire-routes.js';
export type { WireInput, WireOutput, WireQuery } from './wire-types.js';
