import { testConfig } from '../../vitest.base.ts';

// The tests run real processes (timeouts of 1-2 s, bwrap, grandchildren waited for): under a
// full CI run's load they need more than the default 5 s each.
export default testConfig({ testTimeout: 30_000 });
