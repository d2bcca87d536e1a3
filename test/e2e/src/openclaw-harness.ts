import { resolve } from 'node:path';
import type { OpenClawHome, OpenClawHomeOptions } from '@ctxbus/test-kit/openclaw-home';
import {
  createOpenClawHome as createHome,
  openClawUnavailable as unavailable,
} from '@ctxbus/test-kit/openclaw-home';

// The OpenClaw home lives in the test kit (the benchmarks drive OpenClaw with it too); the
// end-to-end tests run this package's pinned `openclaw` through it.

export type { OpenClawAgentRun, OpenClawHome, OpenClawRun } from '@ctxbus/test-kit/openclaw-home';
export {
  OPENCLAW_NO_MEMORY_SEARCH,
  OPENCLAW_QUIET_ENV,
  openClawConfig,
  parseJsonOutput,
} from '@ctxbus/test-kit/openclaw-home';

export const OPENCLAW_BIN = resolve(import.meta.dirname, '../node_modules/.bin/openclaw');

/** Why OpenClaw cannot run here (binary missing, Node too old), or null when it can. */
export const openClawUnavailable = (): string | null => unavailable(OPENCLAW_BIN);

/** An isolated OpenClaw home, running this package's `openclaw`. */
export const createOpenClawHome = (options: Omit<OpenClawHomeOptions, 'bin'>): OpenClawHome =>
  createHome({ bin: OPENCLAW_BIN, ...options });
