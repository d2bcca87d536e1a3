import { cpSync, existsSync, rmSync } from 'node:fs';
import { defineConfig } from 'tsup';
import { library } from '../../tsup.base.ts';

// The dashboard (apps/web, built before the CLI) ships inside the CLI: `ctxbus serve` serves
// dist/web/ with no extra install.
const DASHBOARD_BUILD = new URL('../web/dist/', import.meta.url);
const DASHBOARD_TARGET = new URL('./dist/web/', import.meta.url);

export default defineConfig({
  ...library(
    ['src/bin.ts', 'src/index.ts', 'src/serve-worker.ts', 'src/serve-in-process.ts'],
    'node',
  ),
  banner: { js: '#!/usr/bin/env node' },
  async onSuccess() {
    rmSync(DASHBOARD_TARGET, { recursive: true, force: true });
    if (existsSync(new URL('index.html', DASHBOARD_BUILD))) {
      cpSync(DASHBOARD_BUILD, DASHBOARD_TARGET, { recursive: true });
    } else {
      process.stderr.write(
        'ctxbus build: apps/web is not built; the CLI ships without its dashboard\n',
      );
    }
  },
});
