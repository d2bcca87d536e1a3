import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Each file starts its own hub process; a few at a time keeps the machine responsive.
    maxWorkers: 4,
  },
});
