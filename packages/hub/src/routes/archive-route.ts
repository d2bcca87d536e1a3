import { implement } from '../route-definition.js';

export const archiveRoute = implement('listArchive', {
  summary: 'Items the lifecycle sweep archived, newest first',
  description:
    'With retention mode `archive`, expired items and items past their age limit leave the live store (lists, search, streams) and land here, as they were. Team-scoped; private items only to their runtime. Page with `before` = the last `archiveId`.',
  tags: ['context'],
  statuses: { 200: 'Archived items.' },
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
