import { longestFirst, testConfig } from '../../vitest.base.ts';

/**
 * The files that take longest, longest first (in CI on the 2-core machine: the OpenClaw files
 * 1-3 minutes each, an agent turn 20-60 s; connect's a minute; the others half a minute or
 * less). Vitest's own order (the larger file first, until it has timings) started long files
 * last on a fresh clone, where one ran alone at the end; in this order the two lanes end
 * together (each file goes to the lane free first).
 */
const LONGEST = [
  'openclaw-offline-live.test.ts',
  'openclaw.test.ts',
  'openclaw-responses.test.ts',
  'connect-packed.test.ts',
  'connect.test.ts',
  'claude-code.test.ts',
  'codex.test.ts',
  'first-hour.test.ts',
];

// Real Claude Code and OpenClaw runs (a model run can take minutes on a loaded machine). Each
// file has its own HOME, state directories, hub and port, so files run side by side (two at a
// time, from vitest.base.ts): the OpenClaw file alone takes minutes.
// Each file in a fresh module graph (vitest's default): the worlds' helpers keep state at module
// level, and loading is nothing beside the runtimes' turns here.
export default testConfig({
  testTimeout: 900_000,
  isolate: true,
  sequence: { sequencer: longestFirst(LONGEST) },
});
