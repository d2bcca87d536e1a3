import { defineConfig } from 'tsup';
import { library } from '../../tsup.base.ts';

// Node only: it spawns processes, reads files and signs with node:crypto. The worker (hub
// port, claims, leases) is its own entry, so the engine's users do not load it.
export default defineConfig(
  library({ index: 'src/index.ts', worker: 'src/worker/index.ts' }, 'node'),
);
