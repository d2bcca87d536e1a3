import {
  CtxbusError,
  presenceAnnounceRequestSchema,
  presenceAnnounceResponseSchema,
  presenceInstanceParamsSchema,
} from '@ctxbus/core';
import { z } from 'zod';
import { defineRoute } from '../route-definition.js';

export const presenceRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/presence',
    operationId: 'announcePresence',
    summary: 'Announce a worker or adapter of this runtime, or renew it (heartbeat)',
    description:
      "The runtime is the token's. Announce again before `expiresAt` to stay present (every third of `ttlSeconds` is a good rhythm); an entry not renewed expires. Presence is kept in the store: every hub on the database sees the instance at once (a hub's routing may reuse what it read for up to 250 ms). A team holds a bounded number of instances (429 `limit_reached` past it); an instance id held by another runtime of the team is a 409 `conflict`.",
    tags: ['presence'],
    auth: 'runtime',
    body: presenceAnnounceRequestSchema,
    responses: {
      200: { description: 'Present until `expiresAt`.', schema: presenceAnnounceResponseSchema },
      403: { description: 'The body names another runtime than the token.' },
      409: { description: 'Another runtime of the team holds this instance id.' },
      429: { description: "The team's instance limit is reached." },
    },
    async handler({ body, viewer, services }) {
      if (body.runtime !== undefined && body.runtime !== viewer.runtime) {
        throw new CtxbusError(
          'forbidden',
          `this token acts as runtime ${viewer.runtime}; it cannot announce for ${body.runtime}`,
        );
      }
      const { expiresAt } = await services.presence.announce(viewer.teamId, viewer.runtime, body);
      return {
        status: 200,
        body: { instanceId: body.instanceId, runtime: viewer.runtime, expiresAt },
      };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/api/presence/:instanceId',
    operationId: 'leavePresence',
    summary: 'Take an instance of this runtime off presence at once',
    tags: ['presence'],
    auth: 'runtime',
    params: presenceInstanceParamsSchema,
    responses: {
      200: {
        description: 'It is gone.',
        schema: z.object({ instanceId: z.string(), removed: z.literal(true) }),
      },
      404: { description: 'This runtime has no live instance by that id.' },
    },
    async handler({ params, viewer, services }) {
      if (!(await services.presence.leave(viewer.teamId, viewer.runtime, params.instanceId))) {
        throw new CtxbusError(
          'not_found',
          `runtime ${viewer.runtime} has no live instance ${params.instanceId}`,
          { details: { instanceId: params.instanceId } },
        );
      }
      return { status: 200, body: { instanceId: params.instanceId, removed: true } };
    },
  }),
];
