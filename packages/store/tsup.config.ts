import { defineConfig } from 'tsup';
import { library } from '../../tsup.base.ts';

export default defineConfig({
  ...library(
    {
      index: 'src/index.ts',
      'postgres/index': 'src/postgres/index.ts',
      'testing/index': 'src/testing/index.ts',
    },
    'node',
  ),
  external: ['vitest'],
});
