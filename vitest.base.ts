import { availableParallelism } from 'node:os';
import { basename, relative, resolve } from 'node:path';
import { defineConfig } from 'vitest/config';
import type { InlineConfig, Reporter, TestModule, TestSpecification } from 'vitest/node';
import { BaseSequencer } from 'vitest/node';

/**
 * Lists every skipped test after the run, by file and full name. A skip's reason is in its
 * name ("... (skipped: no PostgreSQL at ...)"), and the default reporter prints only a count.
 */
export class SkipReasonsReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const skipped: string[] = [];
    for (const module of modules) {
      for (const test of module.children.allTests('skipped')) {
        skipped.push(`${relative(process.cwd(), test.module.moduleId)} > ${test.fullName}`);
      }
    }
    if (skipped.length === 0) return;
    const lines = skipped.map((line) => `   - ${line}\n`).join('');
    process.stdout.write(`\n ${skipped.length} skipped, each with its reason:\n${lines}`);
  }
}

/**
 * A sequencer that starts the named files first, in the order given (the longest first), then
 * the others in vitest's own order. Vitest starts the larger file first until it has timings of
 * its own, so on a fresh clone (CI) a long but short-to-read file started last and ran alone at
 * the end.
 */
export function longestFirst(names: readonly string[]): typeof BaseSequencer {
  return class LongestFirst extends BaseSequencer {
    override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
      const rank = (spec: TestSpecification) => {
        const at = names.indexOf(basename(spec.moduleId));
        return at < 0 ? names.length : at;
      };
      return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
    }
  };
}

/**
 * How long one test, or one hook, may take before it is called hung: a guard, never a speed
 * bound (speed goals live in test/bench). A test waits for events, each wait bounded by the
 * test kit's TEST_WAIT_MS (90 s), so that the suite passes on a loaded machine; this leaves
 * room for a few such waits.
 */
export const TEST_TIMEOUT_MS = 300_000;

/**
 * Test files run side by side: at least two at a time, so a 2-core machine runs two (vitest's
 * default there is one: its cores less one). Most files wait on processes, sockets or
 * PostgreSQL more than they compute, and no file shares state with another (scratch schemas,
 * data directories and ports of their own).
 */
export const TEST_WORKERS = Math.max(2, availableParallelism() - 1);

/** A suite's own global setup files, as a list. */
const globalSetups = (test: InlineConfig): string[] =>
  test.globalSetup === undefined ? [] : [test.globalSetup].flat();

/** The test configuration every package shares; `test` adds to it. */
export function testConfig(test: InlineConfig = {}) {
  return defineConfig({
    test: {
      reporters: ['default', new SkipReasonsReporter()],
      maxWorkers: TEST_WORKERS,
      // A worker runs its files one after another in one module graph (vitest's default gives
      // each file a fresh one). Loading the graph again cost most of the CPU of the suites made
      // of small files (the hub's: 20.3 s of CPU isolated, 7.1 s not; integration's 134.7 s,
      // 110.1 s; ~80 s of a CI run in all), and no file shares state with another: scratch
      // schemas, data directories, ports of their own, and the environment a test changes is
      // put back after it.
      isolate: false,
      testTimeout: TEST_TIMEOUT_MS,
      hookTimeout: TEST_TIMEOUT_MS,
      // expect.poll's default (1 s) is a speed bound in disguise: the same guard as the kit's waits.
      expect: { poll: { timeout: 90_000 } },
      ...test,
      // Sweeps the run's temporary directories at its end (vitest.temp-dirs.ts), before or
      // after a suite's own global setup.
      globalSetup: [resolve(import.meta.dirname, 'vitest.temp-dirs.ts'), ...globalSetups(test)],
    },
  });
}
