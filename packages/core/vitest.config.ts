import { testConfig } from '../../vitest.base.ts';

export default testConfig();
