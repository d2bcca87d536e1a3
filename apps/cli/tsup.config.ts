import { defineConfig } from 'tsup';

export default defineConfig({
  entry: ['src/bin.ts', 'src/index.ts', 'src/serve-worker.ts'],
  format: ['esm'],
  dts: { entry: 'src/index.ts' },
  sourcemap: true,
  clean: true,
  target: 'node22',
  platform: 'node',
  removeNodeProtocol: false,
  banner: { js: '#!/usr/bin/env node' },
});
