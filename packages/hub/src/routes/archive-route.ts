import { archiveQuerySchema, archiveResponseSchema } from '@ctxbus/core';
import { defineRoute } from '../route-definition.js';

export const archiveRoute = defineRoute({
  method: 'GET',
  path: '/api/archive',
  operationId: 'listArchive',
  summary: 'Items the lifecycle sweep archived, newest first',
  description:
    'With retention mode `archive`, expired items and items past their age limit leave the live store (lists, search, streams) and land here, as they were. Team-scoped; private items only to their runtime. Page with `before` = the last `archiveId`.',
  tags: ['context'],
  auth: 'runtime',
  query: archiveQuerySchema,
  responses: { 200: { description: 'Archived items.', schema: archiveResponseSchema } },
  async handler({ query, viewer, services }) {
    const items = await services.store.listArchivedItems(viewer, {
      limit: query.limit,
      ...(query.before !== undefined && { beforeArchiveId: query.before }),
    });
    const last = items.at(-1);
    return {
      status: 200,
      body: { items, nextBefore: items.length === query.limit && last ? last.archiveId : null },
    };
  },
});
