import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // The stdio tests spawn the built executable: build it first when the sources are newer.
    globalSetup: ['./vitest.global-setup.ts'],
    testTimeout: 20_000,
    hookTimeout: 60_000,
  },
});
