import { defineConfig } from 'tsup';
import { library } from '../../tsup.base.ts';

export default defineConfig(
  library(
    ['src/index.ts', 'src/contract.ts', 'src/light.ts', 'src/capabilities-entry.ts'],
    'neutral',
  ),
);
