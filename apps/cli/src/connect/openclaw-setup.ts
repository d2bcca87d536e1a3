import type { OpenClawPluginSource, OpenClawRunner } from '@ctxbus/adapter-openclaw';
import { openclawRunner, pluginSource } from '@ctxbus/adapter-openclaw';
import { CtxbusError } from '@ctxbus/core/light';
import { packagedOpenClawPlugin } from '../runtime-files.js';
import type { OpenClawSetup } from './detect.js';
import { detectOpenClaw } from './detect.js';

// How `ctxbus install openclaw` and `ctxbus connect` run OpenClaw and which plugin they give
// it: one rule for both.

/** The plugin to install: the packed tarball in the published package, else the clone's folder (linked). */
export function openclawPlugin(): OpenClawPluginSource {
  const packaged = packagedOpenClawPlugin();
  return packaged ? { kind: 'package', ...packaged } : pluginSource({});
}

export function openclawRun(setup: OpenClawSetup, profile?: string): OpenClawRunner {
  return openclawRunner(setup.bin, profile, setup.node);
}

/**
 * OpenClaw found and checked (its version, a Node that runs it), or the one-line reason it
 * cannot be used: not installed (exit 4), or unable to run here (exit 1).
 */
export function openclawSetup(
  flags: { openclaw?: string; profile?: string },
  progress: (line: string) => void,
): { run: OpenClawRunner; plugin: OpenClawPluginSource } {
  const found = detectOpenClaw(flags.openclaw);
  if (found.status === 'missing') {
    throw new CtxbusError(
      'not_found',
      `OpenClaw is not installed here (no openclaw on PATH): ${found.hint}, or pass --openclaw <path>`,
    );
  }
  if (found.status === 'unusable') {
    throw new CtxbusError('internal', found.reason, { retryable: false });
  }
  if (found.note) progress(`OpenClaw ${found.version}: ${found.note}`);
  return { run: openclawRun(found.setup, flags.profile), plugin: openclawPlugin() };
}
