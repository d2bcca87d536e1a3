// The example of docs/three-layers.md, verbatim (three-layers.test.ts checks the two match and
// runs it against a real hub).
import type { CtxbusClient } from '@ctxbus/client';
import { Blackboard, PersistentResources } from '@ctxbus/client';
import { ContextExporter, createRunContext } from '@ctxbus/core';

export async function prepareRelease(client: CtxbusClient) {
  // Layer 2 and 3 live on the bus: a thread's blackboard, and the team's resources.
  const blackboard = new Blackboard({ client, board: { scope: 'thread', id: 'release-42' } });
  const resources = new PersistentResources({ client });
  const exporter = new ContextExporter({
    autoExportToBlackboard: ['release-notes'], // the root's variables that go on the board
    autoExportToPersistent: ['release-notes'], // and the board entries kept for good
    exportFilters: [{ names: ['draft-*'] }], // never leaves the run it was made in
    resourcePrefix: 'releases/4.2.0/',
  });

  // Layer 1: a root run starts a child run, which declares what it exports.
  const root = createRunContext({ routineId: 'prepare-release', inputs: { version: '4.2.0' } });
  const child = root.createChild(
    { repo: 'ctxbus' },
    { routineId: 'collect-changes', declaredExports: ['changes', 'draft-changes'] },
  );
  await child.step('read-log', (run) => {
    run.set('draft-changes', 'unsorted notes');
    run.set('changes', ['WAL mode for SQLite stores', 'blackboard-updated stream events']);
  });
  const toParent = await exporter.flush(child); // child -> parent: `changes` only

  await root.step('write-notes', (run) => {
    const changes = run.get('changes') as string[];
    run.set('release-notes', `${run.get('version')}: ${changes.join('; ')}`);
  });
  // root -> blackboard (subscribers see blackboard-updated) -> persistent resource
  const toBoard = await exporter.flush(root, { blackboard, resources });

  return { root, child, blackboard, resources, toParent, toBoard };
}
