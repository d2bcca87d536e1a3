import { relative } from 'node:path';
import { defineConfig } from 'vitest/config';
import type { InlineConfig, Reporter, TestModule } from 'vitest/node';

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

/** The test configuration every package shares; `test` adds to it. */
export function testConfig(test: InlineConfig = {}) {
  return defineConfig({
    test: { reporters: ['default', new SkipReasonsReporter()], ...test },
  });
}
