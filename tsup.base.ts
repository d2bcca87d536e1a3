import type { Options } from 'tsup';

/** The build every package shares: ESM with declarations and source maps. */
export function library(entry: Options['entry'], platform: 'node' | 'neutral'): Options {
  return {
    entry,
    format: ['esm'],
    dts: true,
    sourcemap: true,
    clean: true,
    splitting: true,
    target: platform === 'node' ? 'node22' : 'es2023',
    platform,
    // node:sqlite exists only with its prefix; never let esbuild strip it.
    ...(platform === 'node' && { removeNodeProtocol: false }),
  };
}
