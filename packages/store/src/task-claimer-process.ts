import { openSqliteStore } from './sqlite/sqlite-store.js';

// One process of task-concurrency.test.ts's multi-process race: opens the SQLite file given,
// runs `claimers` async claimers (claim, complete, until none is left) and prints what each
// claimed as one JSON line. It starts claiming when a line arrives on stdin. Usage: task-claimer-process.ts <db path> <claimers> <name>

const [path, count, name] = process.argv.slice(2);
if (path === undefined || count === undefined || name === undefined) {
  throw new Error('usage: task-claimer-process.ts <db path> <claimers> <name>');
}
const store = openSqliteStore({ path });
// A start barrier: say ready, then wait for the parent's go (every process races from the
// same moment, however long each took to start).
process.stderr.write('ready\n');
await new Promise((resolve) => process.stdin.once('data', resolve));
const claimed: { taskId: string; workerId: string }[] = [];
try {
  await Promise.all(
    Array.from({ length: Number(count) }, async (_, index) => {
      const workerId = `${name}-${index}`;
      for (;;) {
        const task = await store.claimTask({
          teamId: 'acme',
          runtime: 'claude-code',
          workerId,
          leaseMs: 60_000,
        });
        if (task === null) return;
        claimed.push({ taskId: task.id, workerId });
        await store.completeTask('acme', task.id, task.lease?.token ?? 0, { workerId });
        // Let the other claimers of this process (and the other processes) in between.
        await new Promise((resolve) => setImmediate(resolve));
      }
    }),
  );
} finally {
  await store.close();
}
process.stdout.write(`${JSON.stringify(claimed)}\n`);
