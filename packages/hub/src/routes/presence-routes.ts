import { assertNoSecret, CtxbusError } from '@ctxbus/core';
import { implement } from '../route-definition.js';

export const presenceRoutes = [
  implement('announcePresence', {
    summary: 'Announce a worker or adapter of this runtime, or renew it (heartbeat)',
    description:
      "The runtime is the token's. Announce again before `expiresAt` to stay present (every third of `ttlSeconds` is a good rhythm); an entry not renewed expires. Presence is kept in the store: every hub on the database sees the instance at once (a hub's routing may reuse what it read for up to 250 ms). A team holds a bounded number of instances (429 `limit_reached` past it); an instance id held by another runtime of the team is a 409 `conflict`.",
    tags: ['presence'],
    statuses: {
      200: 'Present until `expiresAt`.',
      403: 'The body names another runtime than the token.',
      409: 'Another runtime of the team holds this instance id.',
      429: "The team's instance limit is reached.",
    },
    async handler({ body, viewer, services }) {
      if (body.runtime !== undefined && body.runtime !== viewer.runtime) {
        throw new CtxbusError(
          'forbidden',
          `this token acts as runtime ${viewer.runtime}; it cannot announce for ${body.runtime}`,
        );
      }
      assertNoSecret(body.instanceId, 'instanceId');
      const { expiresAt } = await services.presence.announce(viewer.teamId, viewer.runtime, body);
      return {
        status: 200,
        body: { instanceId: body.instanceId, runtime: viewer.runtime, expiresAt },
      };
    },
  }),
  implement('leavePresence', {
    summary: 'Take an instance of this runtime off presence at once',
    tags: ['presence'],
    statuses: { 200: 'It is gone.', 404: 'This runtime has no live instance by that id.' },
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
