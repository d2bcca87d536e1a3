import { longestFirst, testConfig } from '../../vitest.base.ts';

/**
 * The files that take longest, longest first (on the 2-core CI machine: 2-5 minutes each; an
 * agent turn is 20-60 s), the others about a minute or less. By vitest's own order (the larger
 * file first, until it has timings) they started last on a fresh clone, and one ran alone at
 * the end.
 */
const LONGEST = [
  'openclaw.test.ts',
  'openclaw-offline.test.ts',
  'openclaw-probe.test.ts',
  'first-hour.test.ts',
];

// Real Claude Code and OpenClaw runs (a model run can take minutes on a loaded machine). Each
// file has its own HOME, state directories, hub and port, so files run side by side (two at a
// time, from vitest.base.ts): the OpenClaw file alone takes minutes.
export default testConfig({ testTimeout: 900_000, sequence: { sequencer: longestFirst(LONGEST) } });
