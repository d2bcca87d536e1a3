import { testConfig } from '../../vitest.base.ts';

// Real Claude Code and OpenClaw runs (a model run can take minutes on a loaded machine).
export default testConfig({ testTimeout: 900_000, fileParallelism: false });
