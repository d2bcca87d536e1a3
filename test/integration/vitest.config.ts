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

/**
 * The hang guard of this suite's tests, twice the shared one: a test here starts CLI processes
 * and hubs by the few (each a second of Node start-up idle), and on a loaded 2-core machine
 * (load 13-20: a CI run beside other work) single tests took 264-300 s, at the shared guard.
 * Still a guard, never a speed bound (speed goals live in test/bench).
 */
const PROCESS_TEST_TIMEOUT_MS = 600_000;

export default testConfig({
  // Each file starts its own hubs (in its worker, or as `ctxbus serve` processes where the
  // process is the subject); a few files at a time keeps the machine responsive.
  maxWorkers: 4,
  testTimeout: PROCESS_TEST_TIMEOUT_MS,
  hookTimeout: PROCESS_TEST_TIMEOUT_MS,
  sequence: { sequencer: longestFirst(LONGEST) },
});
