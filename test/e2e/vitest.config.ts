import { basename } from 'node:path';
import type { TestSpecification } from 'vitest/node';
import { BaseSequencer } from 'vitest/node';
import { testConfig } from '../../vitest.base.ts';

/** The files that take longest, longest first (on the 2-core CI machine: 2-5 minutes each). */
const LONGEST = [
  'openclaw.test.ts',
  'openclaw-offline.test.ts',
  'openclaw-probe.test.ts',
  'first-hour.test.ts',
];

/**
 * The OpenClaw files first: each takes minutes (an agent turn is 20-60 s), the others about a
 * minute or less. By vitest's own order (the larger file first, until it has timings) they
 * started last on a fresh clone, and one ran alone at the end.
 */
class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (spec: TestSpecification) => {
      const at = LONGEST.indexOf(basename(spec.moduleId));
      return at < 0 ? LONGEST.length : at;
    };
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}

// Real Claude Code and OpenClaw runs (a model run can take minutes on a loaded machine). Each
// file has its own HOME, state directories, hub and port, so files run side by side (two at a
// time, from vitest.base.ts): the OpenClaw file alone takes minutes.
export default testConfig({ testTimeout: 900_000, sequence: { sequencer: LongestFirst } });
