import { testConfig } from '../../vitest.base.ts';

// Real browser tests: a hub process, Chromium, one page per test. Generous hook time for the
// browser's start on a loaded machine; each wait inside names what it waits for.
export default testConfig({
  testTimeout: 60_000,
  hookTimeout: 90_000,
  include: ['src/**/*.test.ts'],
});
