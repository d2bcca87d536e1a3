import { testConfig } from '../../vitest.base.ts';

// Conformance cases write thousands of items to a real PostgreSQL: room for a busy machine.
export default testConfig({ testTimeout: 30_000 });
