import { defineConfig } from 'tsup';
import { library } from '../../tsup.base.ts';

export default defineConfig(library(['src/index.ts', 'src/testing.ts'], 'node'));
