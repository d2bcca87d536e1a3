import { randomBytes } from 'node:crypto';
import { readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Every suite's run names the test kit's temporary directories after itself (CTXBUS_TEST_RUN,
// read by test/kit's tempDir and its credentials root) and removes what is left of them at its
// end. A test removes its own directories, but vitest ends its workers with a signal, so their
// exit handlers never ran: one CI run left ~100 credentials directories in /tmp.

const run = randomBytes(4).toString('hex');

/** Names this run, before vitest starts its workers (they inherit the environment). */
export function setup(): void {
  process.env.CTXBUS_TEST_RUN = run;
}

/** Removes the temporary directories of this run that are still there. */
export function teardown(): void {
  const marker = `-${run}-`;
  for (const name of readdirSync(tmpdir())) {
    if (name.startsWith('ctxbus-') && name.includes(marker)) {
      rmSync(join(tmpdir(), name), { recursive: true, force: true });
    }
  }
}
