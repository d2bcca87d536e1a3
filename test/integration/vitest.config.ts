import { longestFirst, testConfig } from '../../vitest.base.ts';

/**
 * The files that take longest, longest first: measured in whole runs of this suite on the
 * 2-core machine (40-170 s each at load 10-15, where most files take 2-30 s). Vitest orders a
 * fresh clone's files by size, which started task-race (a short file) 215 s into a 415 s run
 * and task-crash (the second shortest) 361 s in: the run's last 45 s were theirs alone.
 */
const LONGEST = [
  'task-race.test.ts',
  'postgres-hubs.test.ts',
  'task-crash.test.ts',
  'worker.test.ts',
  'stream-abuse.test.ts',
  'cli.test.ts',
  'task-relay-crash.test.ts',
  'restart.test.ts',
  'readme.test.ts',
  'identities.test.ts',
  'conflicts.test.ts',
  'supabase.test.ts',
];

export default testConfig({
  // Each file starts its own hubs (in its worker, or as `ctxbus serve` processes where the
  // process is the subject); a few files at a time keeps the machine responsive.
  maxWorkers: 4,
  sequence: { sequencer: longestFirst(LONGEST) },
});
