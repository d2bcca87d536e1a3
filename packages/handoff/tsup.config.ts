import { defineConfig } from 'tsup';
import { library } from '../../tsup.base.ts';

// Files and locks: Node only.
export default defineConfig(library({ index: 'src/index.ts' }, 'node'));
