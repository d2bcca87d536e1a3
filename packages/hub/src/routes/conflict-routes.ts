import type { ConflictView } from '@ctxbus/core';
import { CONFLICT_TAG, CONFLICT_WRITER, conflictView } from '@ctxbus/core';
import { implement } from '../route-definition.js';
import { chooser, resolveConflict } from './conflicts.js';

// The conflicts API: list them, and let a person pick the value to keep (see conflicts.ts).

export const conflictRoutes = [
  implement('listConflicts', {
    summary: 'Conflicts: keys two runtimes wrote with different values within the window',
    description:
      'Newest first. `status=open` (the default) lists the conflicts nobody has resolved yet; `all` adds the resolutions (each names the value kept and who chose it). A newer conflict on the same key replaces the older one. `limit` counts the conflict items read before the status filter.',
    tags: ['context'],
    statuses: { 200: 'The conflicts.' },
    async handler({ query, viewer, services }) {
      const items = await services.store.listItems(viewer, {
        keyPrefix: 'conflict/',
        tags: [CONFLICT_TAG],
        sourceRuntime: CONFLICT_WRITER,
        limit: query.limit,
      });
      const conflicts = items
        .map(conflictView)
        .filter((view): view is ConflictView => view !== null)
        .filter((view) => query.status === 'all' || view.status === 'open');
      return { status: 200, body: { conflicts } };
    },
  }),
  implement('resolveConflict', {
    summary: 'A person keeps one of the two values of a conflict',
    description:
      "`keep` names one of the two items the conflict names. When that value does not hold the key now, it is written again as the key's live value (superseding the holder; `runtimeOptions.ctxbus` records `chosenBy`, `restoredFrom` and `conflictId`), and a resolution item (tag `conflict`, `resolved`) closes the conflict, in one atomic write. Only people pick: a token of an approver runtime (capabilities.yaml `approvers`, default cli, telegram, web) or an admin token naming the team; anything else is 403 (reason `approver_required`), audited (`conflict.refused`). Each resolution is audited (`conflict.resolved`). 409 when it was already resolved, replaced by a newer conflict on the key, or the key changed while choosing.",
    tags: ['context'],
    statuses: {
      200: 'Resolved.',
      403: 'Not a person (reason approver_required).',
      404: 'No such conflict.',
      409: 'Already resolved, superseded, or the key changed meanwhile.',
    },
    async handler({ params, body, caller, services }) {
      const who = await chooser(caller, body.team, services, params.id);
      const { resolution, kept } = await resolveConflict(
        services,
        who,
        params.id,
        body.keep,
        body.note ?? null,
      );
      const view = conflictView(resolution);
      if (!view) throw new Error('the resolution is no conflict item');
      return { status: 200, body: { conflict: view, kept } };
    },
  }),
];
