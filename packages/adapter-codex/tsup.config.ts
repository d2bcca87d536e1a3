import { defineConfig } from 'tsup';
import { library } from '../../tsup.base.ts';

export default defineConfig([
  library(['src/index.ts'], 'node'),
  // The hook and the MCP server Codex runs with plain `node`, self-contained (no node_modules
  // beside them once packaged). Each entry checks the Node version before it loads its main
  // file, so an old Node fails open.
  // The hook's main file is CommonJS (ctxbus-codex-hook-main.cjs): its builtins load through
  // require, not as ESM namespaces (see hook-entry.ts).
  {
    entry: { 'ctxbus-codex-hook-main': 'src/hook-main.ts' },
    outDir: 'plugin/dist',
    format: ['cjs'],
    platform: 'node',
    target: 'node22',
    noExternal: [/.*/],
    removeNodeProtocol: false,
    clean: false,
    sourcemap: false,
    minify: true,
    splitting: false,
  },
  {
    entry: {
      'ctxbus-codex-hook': 'src/hook-entry.ts',
      'ctxbus-codex-mcp': 'src/mcp-entry.ts',
      'ctxbus-codex-mcp-main': 'src/mcp-main.ts',
    },
    outDir: 'plugin/dist',
    format: ['esm'],
    platform: 'node',
    target: 'node22',
    noExternal: [/.*/],
    removeNodeProtocol: false,
    clean: false,
    sourcemap: false,
    minify: true,
    splitting: false,
  },
]);
