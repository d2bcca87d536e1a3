import { testConfig } from '../../vitest.base.ts';

export default testConfig({ testTimeout: 20_000, hookTimeout: 30_000 });
