import type { Options } from 'tsup';

/**
 * The build every package shares: ESM with source maps. No declarations: every package's
 * `types` export points at its source, and `tsc -b` (the root typecheck, project references)
 * checks each package once; tsup's declaration pass cost 10-40x the JS build.
 */
export function library(entry: Options['entry'], platform: 'node' | 'neutral'): Options {
  return {
    entry,
    format: ['esm'],
    dts: false,
    sourcemap: true,
    clean: true,
    splitting: true,
    target: platform === 'node' ? 'node22' : 'es2023',
    platform,
    // node:sqlite exists only with its prefix; never let esbuild strip it.
    ...(platform === 'node' && { removeNodeProtocol: false }),
  };
}
