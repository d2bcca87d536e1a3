import { defineConfig } from 'tsup';
import { library } from '../../tsup.base.ts';

// Files and locks: Node only. `light` is what hooks load (no zod, no YAML).
export default defineConfig(library({ index: 'src/index.ts', light: 'src/light.ts' }, 'node'));
