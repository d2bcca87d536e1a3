import { defineConfig } from 'tsup';
import { library } from '../../tsup.base.ts';

export default defineConfig({
  ...library(['src/bin.ts', 'src/index.ts', 'src/serve-worker.ts'], 'node'),
  dts: { entry: 'src/index.ts' },
  banner: { js: '#!/usr/bin/env node' },
});
