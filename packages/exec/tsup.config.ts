import { defineConfig } from 'tsup';
import { library } from '../../tsup.base.ts';

// Node only: it spawns processes, reads files and signs with node:crypto.
export default defineConfig(library({ index: 'src/index.ts' }, 'node'));
