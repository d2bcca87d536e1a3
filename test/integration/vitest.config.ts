import { testConfig } from '../../vitest.base.ts';

export default testConfig({
  // Each file starts its own hub process; a few at a time keeps the machine responsive.
  maxWorkers: 4,
});
