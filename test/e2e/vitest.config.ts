import { testConfig } from '../../vitest.base.ts';

// Real Claude Code and OpenClaw runs (a model run can take minutes on a loaded machine). Each
// file has its own HOME, state directories, hub and port, so files run side by side (two at a
// time, from vitest.base.ts): the OpenClaw file alone takes minutes.
export default testConfig({ testTimeout: 900_000 });
