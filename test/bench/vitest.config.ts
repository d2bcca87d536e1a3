import { testConfig } from '../../vitest.base.ts';

// Each file in a fresh module graph (vitest's default): two files of whole benchmark runs, where
// loading is nothing beside the runs.
export default testConfig({ isolate: true });
