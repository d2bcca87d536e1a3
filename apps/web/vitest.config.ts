import { testConfig } from '../../vitest.base.ts';

// Real browser tests: a hub process, Chromium, one page per test; each wait inside names what
// it waits for.
export default testConfig({ include: ['src/**/*.test.ts'] });
