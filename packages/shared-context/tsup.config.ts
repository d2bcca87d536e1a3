import { defineConfig } from 'tsup';
import { library } from '../../tsup.base.ts';

// Files, watchers and a hub client: Node only.
export default defineConfig(library({ index: 'src/index.ts' }, 'node'));
