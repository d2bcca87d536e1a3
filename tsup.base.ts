import type { Options } from 'tsup';

/**
 * The build every package shares: ESM with source maps. No declarations: every package's
 * `types` export points at its source, and `tsc -b` (the root typecheck, project references)
 * checks each package once; tsup's declaration pass cost 10-40x the JS build, and it needs
 * TypeScript's JavaScript API, which TypeScript 7 (the repo's) does not have.
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

/**
 * A self-contained entry a runtime starts with plain `node` from a folder with no node_modules
 * (a hook, an MCP server): everything bundled, minified, one file per entry. `cjs` for a hook's
 * main file: its builtins then load through require, not as ESM namespaces whose getters load
 * more of Node (see the adapters' hook-entry.ts).
 */
export function selfContained(
  entry: Record<string, string>,
  outDir: string,
  format: 'esm' | 'cjs',
): Options {
  return {
    entry,
    outDir,
    format: [format],
    platform: 'node',
    target: 'node22',
    noExternal: [/.*/],
    removeNodeProtocol: false,
    clean: false,
    sourcemap: false,
    minify: true,
    splitting: false,
  };
}
