import { testConfig } from '../../vitest.base.ts';

export default testConfig({ testTimeout: 180_000, hookTimeout: 60_000 });
