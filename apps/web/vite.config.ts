import { defineConfig } from 'vite';

// The dashboard is served by the hub at `/` (same origin as the API): relative asset URLs,
// hashed file names (cached for good), no source maps in what ships with the CLI.
export default defineConfig({
  base: '/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2023',
    sourcemap: false,
    assetsInlineLimit: 0,
  },
});
