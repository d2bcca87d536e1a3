import { testConfig } from '../../vitest.base.ts';

// Each file in a fresh module graph (vitest's default): two files of whole benchmark runs, where
// loading is nothing beside the runs. A test is a quick run of a whole section, whose length
// follows the machine's speed (the tasks section took over 5 minutes in a CI run on a slow,
// loaded 2-core machine): the hang guard is 15 minutes, as for the end-to-end runs.
export default testConfig({ isolate: true, testTimeout: 900_000 });
