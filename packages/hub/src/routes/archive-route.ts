import { implement } from '../route-definition.js';
import { itemPageChars, withinPageBudget } from './page-budget.js';

export const archiveRoute = implement('listArchive', {
  summary: 'Items the lifecycle sweep archived, newest first',
  description:
    'With retention mode `archive`, expired items and items past their age limit leave the live store (lists, search, streams) and land here, as they were. Team-scoped; private items only to their runtime. A page holds at most about 4 Mi characters of item text (at least one item); page on with `before` = `nextBefore` until it is null.',
  tags: ['context'],
  statuses: { 200: 'Archived items.' },
  async handler({ query, viewer, services }) {
    const listed = await services.store.listArchivedItems(viewer, {
      limit: query.limit,
      ...(query.before !== undefined && { beforeArchiveId: query.before }),
    });
    const { page: items, cut } = withinPageBudget(listed, (entry: (typeof listed)[number]) =>
      itemPageChars(entry.item),
    );
    const last = items.at(-1);
    const more = cut || listed.length === query.limit;
    return {
      status: 200,
      body: { items, nextBefore: more && last ? last.archiveId : null },
    };
  },
});
