import { CtxbusError } from '@ctxbus/core';
import { mintToken, tokenInfo } from '../auth.js';
import { implement } from '../route-definition.js';

export const adminRoutes = [
  implement('createToken', {
    summary: 'Create a runtime token (admin)',
    description: 'The secret is in this response only; the hub stores its SHA-256 hash.',
    tags: ['admin'],
    statuses: { 201: 'The new token.' },
    async handler({ body, services }) {
      const minted = await mintToken(
        services.store,
        { role: 'runtime', teamId: body.teamId, runtime: body.runtime, label: body.label ?? null },
        services.clock(),
      );
      return { status: 201, body: { token: minted.token, info: tokenInfo(minted.record) } };
    },
  }),
  implement('listTokens', {
    summary: 'List tokens (admin)',
    tags: ['admin'],
    statuses: { 200: 'Tokens, oldest first.' },
    async handler({ query, services }) {
      const records = await services.store.listTokens({
        ...(query.team !== undefined && { teamId: query.team }),
        ...(query.includeRevoked !== undefined && { includeRevoked: query.includeRevoked }),
      });
      return { status: 200, body: { tokens: records.map(tokenInfo) } };
    },
  }),
  implement('revokeToken', {
    summary: 'Revoke a token (admin)',
    description:
      "Takes effect at once on this hub, where the token's open streams end with a `token_revoked` disconnect and the subscriptions it created are removed; other hubs sharing the store refuse it, end its streams and stop its push subscriptions within their token-verdict interval (5 s). Revoking twice is not an error.",
    tags: ['admin'],
    statuses: { 200: 'The revoked token.' },
    async handler({ params, services }) {
      const record = await services.store.revokeToken(params.id);
      if (!record) {
        throw new CtxbusError('not_found', `no token ${params.id}`, { details: { id: params.id } });
      }
      services.verifier.forget(record.id);
      services.feed.endToken(record.id);
      // Its push subscriptions end with it (a dispatcher on another hub finds them within 5 s).
      const subscriptions = await services.store.listSubscriptions(
        record.teamId === null ? {} : { teamId: record.teamId },
      );
      for (const subscription of subscriptions) {
        if (subscription.tokenId === record.id)
          await services.store.deleteSubscription(subscription.id);
      }
      return { status: 200, body: { token: tokenInfo(record) } };
    },
  }),
  implement('streamStats', {
    summary: "This hub's live streams (admin)",
    description:
      'Open SSE and WebSocket subscriptions on this hub, how many streams it ended since it started, by reason: `slow_reader` (held more than the per-stream byte bound of undelivered changes) and `token_revoked`, and how many store reads streams made to catch up.',
    tags: ['admin'],
    statuses: { 200: 'The counts.' },
    handler({ services }) {
      return {
        status: 200,
        body: {
          open: services.feed.subscriberCount,
          maxPendingBytes: services.feed.maxPendingBytes,
          ended: { ...services.feed.ended },
          closing: services.feed.lingeringCount,
          catchUpReads: services.feed.catchUpReads,
        },
      };
    },
  }),
  implement('taskStats', {
    summary: "This hub's task counters (admin)",
    description:
      'Since this hub started: claim attempts and how many took a task (attempts per task taken show whether idle workers herd on each new task), wakes of waiting claims, and the batches, events and failed passes of the task relay.',
    tags: ['admin'],
    statuses: { 200: 'The counts.' },
    handler({ services }) {
      return {
        status: 200,
        body: {
          claims: { ...services.tasks.claims, ...services.tasks.waiting },
          relay: {
            failures: services.taskRelay.failures,
            batches: services.taskRelay.batches,
            events: services.taskRelay.events,
          },
        },
      };
    },
  }),
];
